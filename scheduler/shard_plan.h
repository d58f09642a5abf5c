// ShardPlan: which blocks' model state is sharded over the data-parallel ranks (--shard), and
// which floats of a sharded block each rank owns. Pure data, immutable after Make.
//
// Note [Shards]
// A sharded block of N floats (its contiguous layout, core/nn/model_layout.h) is cut into `ranks`
// shards of S floats, S = ceil(N / ranks) rounded up to a norm chunk (kNormChunkFloats). Rank r
// owns floats [r*S, min(N, (r+1)*S)): the pieces of its tensors in that range, for parameters,
// gradient and AdamW moments, are paged into pages of its own (StatePages) that live only in its
// tiers (device, host, its own NVMe directory). On the device the block is whole: a gathered slot
// of ranks*S floats, filled by uploading the rank's own pieces to their place and an in-place
// all-gather of the shards; a gradient slot is reduce-scattered in place, so the sum of rank r's
// shard lands where its pieces go down from. Shards start on norm chunks, so each rank computes
// exactly the chunk partials one rank would (Note [Norm in chunk order] in grad_norm.h) and the
// gathered partials add to the same norm. A replicated block is owned whole by every rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/model_layout.h"
#include "core/util/status.h"

namespace strata::scheduler {

class ShardPlan {
 public:
  ShardPlan() = default;
  // `sharded[b]`: block b is sharded over `ranks` (>= 1); 0 <= rank < ranks. With one rank
  // nothing is sharded, whatever `sharded` says.
  // `held[b]` (empty: every block): a pipeline stage holds only its own blocks (and the last one
  // the tied embedding's replica); a block it does not hold has no floats here (no pages, no
  // slot) and is described as "elsewhere".
  static ShardPlan Make(const ModelLayout& layout, int rank, int ranks, std::vector<bool> sharded,
                        const std::vector<bool>& held = {});
  // Every block replicated (one rank, or --shard none).
  static ShardPlan Replicated(const ModelLayout& layout, int rank = 0, int ranks = 1);

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  int num_blocks() const { return int(numel_.size()); }
  bool sharded(int block) const { return sharded_[block]; }
  bool held(int block) const { return held_.empty() || held_[block]; }
  bool any_sharded() const;
  // S: the floats of one shard (the block's numel when replicated).
  int64_t shard_floats(int block) const { return shard_[block]; }
  // The floats a device slot of the block holds: ranks * S when sharded, else numel.
  int64_t gathered_floats(int block) const;
  // This rank's floats [begin, end) of the block's layout (the whole block when replicated;
  // empty when the block is smaller than the shards before this rank's).
  int64_t owned_begin(int block) const;
  int64_t owned_end(int block) const;
  // "blocks 0-3: sharded, 4: replicated" (the first line of a run).
  std::string describe() const;

 private:
  int rank_ = 0, ranks_ = 1;
  std::vector<bool> sharded_;
  std::vector<bool> held_;  // empty: every block
  std::vector<int64_t> numel_, shard_;
};

// The decisions of ShardPlan::describe()'s text ("0-3: sharded, 4: replicated"), one per block;
// InvalidArgument when the text does not say exactly one decision for each of `num_blocks`.
Result<std::vector<bool>> ParseShardDecisions(const std::string& text, int num_blocks);

// The layout as device slots see it: each sharded block's numel is its gathered floats. For
// slot sizing (memory_plan.h) only; its tensors are the model's.
ModelLayout GatheredLayout(const ModelLayout& layout, const ShardPlan& shards);

}  // namespace strata::scheduler
