// A model's state described as blocks of named tensors, each block one contiguous float range:
// what any model's description is made of (models/gpt2/gpt_layout.h, models/llama/llama_layout.h),
// and the unit the scheduler reasons about (a block owns its parameters and, in the same layout,
// their gradients and optimizer moments).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

// Every tensor starts at a multiple of kTensorAlignFloats inside its block, so that kernels get
// aligned pointers and a block's byte size is a multiple of 64.
inline constexpr int64_t kTensorAlignFloats = 16;  // 64 bytes

// `floats` rounded up to a multiple of kTensorAlignFloats.
inline int64_t AlignedFloats(int64_t floats) {
  return (floats + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
}

// Hands out consecutive aligned pieces of one buffer, or with a null base only counts them: the
// same code sizes an activation buffer and carves it.
class FloatCarver {
 public:
  explicit FloatCarver(float* base) : base_(base) {}
  float* take(int64_t floats) {
    float* p = base_ != nullptr ? base_ + used_ : nullptr;
    used_ += AlignedFloats(floats);
    return p;
  }
  int64_t used() const { return used_; }

 private:
  float* base_;
  int64_t used_ = 0;
};

enum class BlockKind { kEmbedding, kTransformer, kHead };

enum class InitKind { kNormal, kZeros, kOnes };

// Tensor parallelism (Megatron-LM; Note [Tensor-parallel slices] in core/nn/tp_layout.h): how
// tensor-parallel rank t of T holds the tensor, and so where the all-reduces go.
// - kReplicated: whole on every rank (norms, positions, a row-parallel linear's bias);
// - kColumn: a linear's output features, cut in T (its output is the rank's part of the whole);
// - kRow: a linear's input features, cut in T (its output is a partial sum, all-reduced);
// - kVocab: the vocabulary's rows, padded to a multiple of kTpVocabPadding and cut in T.
enum class TpRule { kReplicated, kColumn, kRow, kVocab };

struct TensorSpec {
  std::string name;            // full Hugging Face name, e.g. "transformer.h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t offset = 0;          // in floats from the start of the block
  bool decay = false;          // weight decay applies (tensors with 2 or more dims)
  InitKind init = InitKind::kZeros;
  float init_std = 0.0f;       // for kNormal
  TpRule tp = TpRule::kReplicated;
  int tp_dim = 0;       // the dimension a slice cuts: where the features lie in the stored shape
  int tp_parts = 1;     // a fused tensor's parts, each cut alike (GPT-2's c_attn: q, k and v)
  int64_t tp_unit = 1;  // a part is cut in whole units of this many (an attention head's width)
  // --split-ops gathers it in slices of the rows of its stored shape's dimension 0
  // (core/nn/split_weights.h): the family's linear gives the whole tensor's bits slice by slice.
  bool split = false;
};

struct BlockSpec {
  BlockKind kind = BlockKind::kEmbedding;
  int layer = -1;              // transformer layer index, -1 for embedding and head
  std::string name;            // "embedding", "h.3", "head"
  std::vector<TensorSpec> tensors;
  int64_t numel = 0;           // floats including alignment padding
};

// "(d0, d1, ...)", a tensor's shape in messages.
std::string ShapeString(const std::vector<int64_t>& shape);

// Appends a tensor at the block's end (aligned), weight decay on tensors of 2 or more dims.
void AppendTensor(BlockSpec& block, std::string name, std::vector<int64_t> shape, InitKind init,
                  float init_std = 0.0f);

// The tensor appended last is cut for tensor parallelism by `rule` along `dim` of its shape, in
// `parts` equal parts cut alike, each in whole units of `unit` (a head's width).
void SetTensorParallel(BlockSpec& block, TpRule rule, int dim, int parts = 1, int64_t unit = 1);

// Lays the block's tensors out again from their shapes (numel, offsets, the block's numel):
// after a description changed shapes, e.g. a tensor-parallel rank's slice (tp_layout.h).
void RelayBlock(BlockSpec& block);

// Fills a block's parameters (numel floats at `block_params`) as its tensors' InitKind says.
// Each tensor draws from its own stream seeded by (seed, name), so a tensor's values do not
// depend on where it is stored.
void InitBlockParams(const BlockSpec& block, uint64_t seed, float* block_params);

}  // namespace strata
