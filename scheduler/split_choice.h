// ChooseSplit: --split-ops (Note [Split operators] in split_plan.h) and the memory plan it gives.
// K splits every sharded transformer block; auto keeps blocks whole when the memory plan fits
// --gpu-mem so, else takes the smallest K with which it fits (splitting costs only the slices'
// gathers, but it costs them every op). A rank's split slot holds its own pieces of the MLP
// weights, so the ranks' plans differ: auto takes the K that fits on every rank (their
// collectives must match).
//
// Errors: MakeMemoryPlan's (the last factor tried's ResourceExhausted when none fits);
// ResourceExhausted naming --gpu-mem when under auto the largest K fits this rank and not
// another; the Comm's.
// Threads: one caller; collective over `ranks` under --split-ops auto with a sharded block.
#pragma once

#include <string>

#include "core/nn/model_layout.h"
#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/memory_plan.h"
#include "scheduler/shard_plan.h"
#include "scheduler/split_plan.h"

namespace strata::scheduler {

struct SplitChoiceInput {
  // This rank's blocks, what it owns of them, and the layout as the device slots see them
  // (GatheredLayout); borrowed: `layout` must outlive the SplitPlan chosen (it points to it).
  const ModelLayout* layout = nullptr;
  const ShardPlan* shards = nullptr;
  const ModelLayout* gathered_layout = nullptr;
  std::string split_ops;            // --split-ops: 1, 2, 4 (checked before) or auto
  uint64_t gpu_mem = 0;             // --gpu-mem, for auto's refusal
  parallel::Comm* ranks = nullptr;  // the data-parallel group (auto's agreement); nullptr: one
};

struct SplitChoice {
  SplitPlan split;
  MemoryPlan plan;  // MakeMemoryPlan's with the chosen split's slots and slice buffers
  // The split factors and, for auto, why (the first line).
  std::string how;
};

// `in_plan`: the memory plan's input but the split's own fields (param_layout, slice_bytes).
Result<SplitChoice> ChooseSplit(const SplitChoiceInput& in, MemoryPlanInput in_plan);

}  // namespace strata::scheduler
