// ChooseShards: which of its blocks a data-parallel rank holds a shard of (Note [Shards] in
// shard_plan.h), from --shard: none, all, or auto (Note [OSDP's choice] in shard_search.h). Under
// auto a resumed run keeps its checkpoint's choice (its pages are cut that way); otherwise every
// rank measures and searches (shard_measure.h, shard_search.h) and rank 0's choice is broadcast
// (the measurements differ by noise). Then it refuses what sharding rules out.
//
// Errors: InvalidArgument naming --shard for a sharded run with several micro-batches per
// data-parallel rank under --pp, or in micro-batch-major order; NotSupported for --export-grads
// with sharded blocks; the checkpoint record's read errors, the scratch device's and the
// Comm's.
// Threads: one caller; collective over grid->ranks under --shard auto with several ranks.
#pragma once

#include <string>
#include <vector>

#include "core/nn/model.h"
#include "core/util/status.h"
#include "scheduler/shard_plan.h"
#include "scheduler/train_options.h"

namespace strata::scheduler {

struct ShardChoiceInput {
  const Model* model = nullptr;         // what --shard auto measures a layer and the head of
  const ModelLayout* layout = nullptr;  // this rank's blocks (its tensor-parallel slice)
  // --shard, --pp; grid->ranks: this rank's data-parallel group (nullptr: one rank).
  const GridOptions* grid = nullptr;
  const CheckpointOptions* checkpoints = nullptr;  // --ckpt-dir, --resume
  // --page-size, --host-mem, --nvme-dir (the search's budget), --micro-batch-order, --recompute.
  const BudgetOptions* budgets = nullptr;
  std::vector<bool> held;  // the blocks this rank holds pages of (RankGroups::held_blocks)
  int micro_rows = 0;      // rows per micro-batch
  int micro_batches = 0;   // micro-batches per step on this rank
  int seq = 0;
  int threads = 1;  // the search's kernels' TBB arena
  // --device: the kind of the search's scratch device (on grid->ranks' GPU).
  std::string device;
  std::string dtype;          // --dtype: the search's kernels
  bool export_grads = false;  // --export-grads given
};

struct ShardChoice {
  ShardPlan plan;   // what this rank owns
  std::string how;  // --shard auto: how the choice was made (for the first line); else ""
};

Result<ShardChoice> ChooseShards(const ShardChoiceInput& in);

}  // namespace strata::scheduler
