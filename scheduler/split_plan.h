// SplitPlan: operator splitting of sharded blocks (--split-ops), and where each float of a split
// block's parameters lives in its device slot. Pure data, immutable after Make.
//
// Note [Split operators]
// A sharded layer gathered whole needs a slot of the whole block on every rank, while it owns only
// 1/dp of it. Most of a layer is a few large weights, which the model's description marks `split`
// (TensorSpec::split; e.g. a transformer's MLP weights, (C, 4C) and (4C, C): 8C^2 of its 12C^2
// floats). With split factor K, those weights are never gathered whole: each is gathered
// and computed in K slices of rows, so only a slice of them is live at once (two slices: the next
// one is gathered while this one computes). The model's split ops take them slice by slice
// (Model::layer_forward_split, core/nn/split_weights.h).
// - Slot. A split block's parameter slot holds the rest of the block gathered (its other tensors,
//   packed in layout order at 16-float alignment) and, after it, this rank's own pieces of the two
//   weights (the floats of its shard, Note [Shards] in shard_plan.h). Its size is the largest
//   rank's: every rank must have the same slots, so that the same ops miss and gather on every
//   rank (the collectives match). A rank that owns most of the MLP weights saves least. Pages
//   upload each piece to param_slot_offset(). Ownership is the shards' and does not change:
//   checkpoints, pages and AdamW do not know about splitting, so a run may resume with another
//   --split-ops.
// - Gathers. The rest is broadcast from each owner in rank order (the ranks' pieces of it differ
//   in size, so it is no all-gather); a slice is gathered into a slice buffer by broadcasts of its
//   owners' pieces, each owner first copying its piece from its slot. The gradient slot is whole,
//   as before.
// - Bits. A slice is a range of whole forward chunks of rows (Note [Linear forward in row chunks]
//   in core/kernels/linear.h): slice by slice the forward adds the same chunks in the same order
//   as an unsplit run, and a row slice's backward gives the whole linear's bits. So a split run
//   gives the same losses, norms and weights as an unsplit one. K divides kLinearChunks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/nn/model_layout.h"
#include "core/util/status.h"
#include "scheduler/shard_plan.h"

namespace strata::scheduler {

// The tensors a split block gathers in slices (TensorSpec::split), in layout (forward) order.
std::vector<int> SplitTensors(const BlockSpec& spec);

// One owner's piece of a slice: `floats` floats broadcast from rank `root` into the slice buffer at
// `dest`; on the root they come from its parameter slot at `src` (-1 on the other ranks).
struct SlicePiece {
  int root = 0;
  int64_t dest = 0;
  int64_t floats = 0;
  int64_t src = -1;
};

class SplitPlan {
 public:
  SplitPlan() = default;  // nothing split
  // factors[b]: block b's split factor (1: whole). InvalidArgument when a factor does not divide
  // kLinearChunks, or is above 1 for a block that is not sharded or has no split tensors.
  static Result<SplitPlan> Make(const ModelLayout& layout, const ShardPlan& shards,
                                std::vector<int> factors);

  int factor(int block) const { return factors_.empty() ? 1 : factors_[block]; }
  bool split(int block) const { return factor(block) > 1; }
  bool any_split() const;
  // Floats of the block's parameter slot: the split layout above, else the gathered block.
  int64_t param_slot_floats(int block) const;
  // Float offset in the parameter slot of float `offset` (of the block's layout) of `tensor`:
  // `offset` itself unless the block is split.
  int64_t param_slot_offset(int block, int tensor, int64_t offset) const;
  // Split blocks: the slot floats [begin, end) that rank r broadcasts of the rest of the block.
  std::pair<int64_t, int64_t> rest_range(int block, int rank) const;
  // Rows [r0, r1) of slice k of `tensor` (one of SplitTensors), and its owners' pieces.
  std::pair<int, int> slice_rows(int block, int tensor, int k) const;
  std::vector<SlicePiece> slice_pieces(int block, int tensor, int k) const;
  // The floats of the largest slice of any split block (0 when none is split).
  int64_t slice_buffer_floats() const { return slice_floats_; }
  // "1" when nothing is split, else "2 for blocks 1-4" (the first line of a run).
  std::string describe() const;

 private:
  struct Block {
    std::vector<int64_t> slot_offset;  // per tensor: where its first slot float maps from
    std::vector<int64_t> from;         // per tensor: the layout offset mapped to slot_offset
    std::vector<std::pair<int64_t, int64_t>> rest;  // per rank
    int64_t slot_floats = 0;
  };
  // Block b's slot: the rest packed, then this rank's pieces of the split weights.
  static Block LayOut(const BlockSpec& spec, const ShardPlan& shards, int b);

  const ModelLayout* layout_ = nullptr;
  ShardPlan shards_;
  std::vector<int> factors_;
  std::vector<Block> blocks_;
  int64_t slice_floats_ = 0;
};

// The layout as parameter slots see it: `gathered` (GatheredLayout) with each split block's numel
// its parameter slot's floats. For slot sizing (memory_plan.h) only.
ModelLayout ParamSlotLayout(const ModelLayout& gathered, const SplitPlan& split);

// Split factors for --split-ops K: K for every sharded block with split tensors, 1 for the others.
std::vector<int> SplitFactors(int k, const ShardPlan& shards, const ModelLayout& layout);

}  // namespace strata::scheduler
