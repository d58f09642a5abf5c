// A model's state as blocks of named tensors packed back to back: what every model's
// description is (GptLayout in models/gpt2/gpt_layout.h, LlamaLayout in models/llama/llama_layout.h
// add their shape to it), and all that the runtime's state handling needs of a model: which
// floats a block owns, their names, their initialisation and weight decay.
//
// Blocks, in forward order: block 0 is the embedding, blocks 1 .. L the model's layers, block
// L + 1 the head (BlockKind says which). A block's parameters are one contiguous float range;
// its gradients and optimizer moments use the same layout.
#pragma once

#include <cstdint>
#include <vector>

#include "core/nn/block_spec.h"

namespace strata {

struct ModelLayout {
  std::vector<BlockSpec> blocks;
  std::vector<int64_t> block_offset;  // in floats, blocks packed back to back
  int64_t total_numel = 0;            // floats including padding

  const BlockSpec& embedding() const { return blocks.front(); }
  const BlockSpec& head() const { return blocks.back(); }
  int num_blocks() const { return static_cast<int>(blocks.size()); }
  // Layers between the ends.
  int num_layers() const { return num_blocks() - 2; }
};

// Appends `block` after the last one (its offset is the running total).
void PackBlock(ModelLayout& layout, BlockSpec block);

}  // namespace strata
