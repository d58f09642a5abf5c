// PagedTrainer's sharded state (Note [Shards] in shard_plan.h): which blocks this rank holds a
// shard of (chosen by scheduler/shard_choice.h), the operator splitting of its sharded blocks
// (chosen by scheduler/split_choice.h), and gathering a block's shards (--export).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/paged_trainer_impl.h"
#include "scheduler/shard_choice.h"
#include "scheduler/split_choice.h"

namespace strata::internal {

// Which blocks this rank holds a shard of (scheduler/shard_choice.h), and the layout the device
// slots see.
Status PagedTrainer::make_shards() {
  scheduler::ShardChoiceInput in{.model = model_.get(),
                                 .layout = &layout_,
                                 .grid = &o_.grid,
                                 .checkpoints = &o_.checkpoints,
                                 .budgets = &o_.budgets,
                                 .held = groups_.held_blocks(layout_.num_blocks()),
                                 .micro_rows = micro_rows(),
                                 .micro_batches = rank_rows() / micro_rows(),
                                 .seq = seq_,
                                 .threads = threads_,
                                 .device = o_.device,
                                 .dtype = o_.dtype,
                                 .export_grads = !o_.outputs.export_grads_path.empty()};
  STRATA_ASSIGN_OR_RETURN(scheduler::ShardChoice choice, scheduler::ChooseShards(in));
  shards_ = std::move(choice.plan);
  shard_choice_ = std::move(choice.how);
  gathered_layout_ = scheduler::GatheredLayout(layout_, shards_);
  return Status::Ok();
}

// --split-ops and the memory plan it gives (scheduler/split_choice.h).
Result<MemoryPlan> PagedTrainer::plan_split(scheduler::MemoryPlanInput in) {
  STRATA_ASSIGN_OR_RETURN(scheduler::SplitChoice choice,
                          scheduler::ChooseSplit({.layout = &layout_,
                                                  .shards = &shards_,
                                                  .gathered_layout = &gathered_layout_,
                                                  .split_ops = o_.grid.split_ops,
                                                  .gpu_mem = o_.budgets.gpu_mem,
                                                  .ranks = o_.grid.ranks},
                                                 std::move(in)));
  split_ = std::move(choice.split);
  split_choice_ = std::move(choice.how);
  return std::move(choice.plan);
}

// A block's values of `role` into `values` (its layout's numel floats): read from this rank's
// pages, then, when sharded, the other ranks' shards gathered (collective: every rank calls it).
Status PagedTrainer::gather_block(int block, Role role, float* values) {
  if (!shards_.sharded(block)) return scheduler::ReadBlockPages(*mm_, *pages_, block, role, values);
  const int64_t shard = shards_.shard_floats(block);
  std::vector<float> gathered(size_t(shards_.gathered_floats(block)), 0.0f);
  STRATA_RETURN_IF_ERROR(scheduler::ReadBlockPages(*mm_, *pages_, block, role, gathered.data()));
  STRATA_RETURN_IF_ERROR(o_.grid.ranks
                             ->all_gather(gathered.data() + rank() * shard, gathered.data(),
                                          size_t(shard) * sizeof(float))
                             .wait()
                             .with_context("gathering block " + std::to_string(block)));
  std::copy_n(gathered.begin(), layout_.blocks[block].numel, values);
  return Status::Ok();
}

}  // namespace strata::internal
