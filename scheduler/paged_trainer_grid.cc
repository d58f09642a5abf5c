// PagedTrainer on the grid (parallel/grid.h): this rank's groups (built by
// scheduler/rank_groups.h), the first line that says what each rank holds, and the copies between
// the whole model (--init, --export) and this rank's tensor-parallel slice of it (Note
// [Tensor-parallel slices] in core/nn/tp_layout.h).
#include <algorithm>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "scheduler/data_parallel.h"
#include "scheduler/paged_trainer_impl.h"
#include "scheduler/stage_costs.h"

namespace strata::internal {

// The grid's groups (scheduler/rank_groups.h), rank 0 measuring the stage costs on the whole
// model's blocks; then this rank's data-parallel group is the ranks the trainer's steps see.
Status PagedTrainer::make_grid() {
  scheduler::RankGroupsInput in;
  in.grid = &o_.grid;
  in.n_layer = model_->shape().n_layer;
  in.batch = o_.data.batch;
  in.micro_batch = o_.data.micro_batch;
  in.measure_stage_costs = [this](int micro_rows) {
    return scheduler::MeasureStageCosts(*model_, micro_rows, seq_, threads_);
  };
  STRATA_ASSIGN_OR_RETURN(groups_, scheduler::MakeRankGroups(in));
  o_.grid.ranks = groups_.dp();
  return Status::Ok();
}

// What this rank holds per tier: "params 1.00 MiB on device, gradients ... through the host,
// moments ... on host" (and its recompute, in a job whose ranks hold different parts).
std::string PagedTrainer::tiers_text(const std::vector<uint64_t>& f) const {
  std::string text = "params " + FormatBytes(f[0]) + " on " +
                     memory::TierName(static_cast<memory::Tier>(f[3])) + ", gradients " +
                     FormatBytes(f[1]) + " through the host, moments " + FormatBytes(f[2]) +
                     " on " + memory::TierName(static_cast<memory::Tier>(f[4]));
  if (o_.grid.tp > 1 || piped()) {
    text += ", recompute " + std::to_string(f[5]) + " of " + std::to_string(f[6]) + " blocks";
  }
  return text;
}

// The run's first line: the micro-batch order, after the grid in a job of several ranks, with
// what each rank holds where (gathered: the stages and the tp slices hold different parts).
Status PagedTrainer::log_first_line() {
  if (world_size() == 1) {
    Logger("train")->info("{}", plan_.order_to_string());
    return Status::Ok();
  }
  const uint64_t page = pages_->page_bytes();
  const std::vector<uint64_t> mine = {
      pages_->pages_of_role(Role::kParam) * page, pages_->pages_of_role(Role::kGrad) * page,
      (pages_->pages_of_role(Role::kAdamM) + pages_->pages_of_role(Role::kAdamV)) * page,
      uint64_t(plan_.params), uint64_t(plan_.optimizer), uint64_t(plan_.recompute_layers),
      uint64_t(plan_.layers)};
  std::string per_tier = tiers_text(mine);
  if (o_.grid.tp > 1 || piped()) {
    std::vector<uint64_t> all(mine.size() * size_t(world_size()));
    STRATA_RETURN_IF_ERROR(groups_.world()
                               ->all_gather(mine.data(), all.data(), mine.size() * 8)
                               .wait()
                               .with_context("gathering what each rank holds"));
    per_tier.clear();
    for (int r = 0; r < world_size(); ++r) {
      const std::vector<uint64_t> f(all.begin() + r * mine.size(),
                                    all.begin() + (r + 1) * mine.size());
      per_tier += (r > 0 ? "; rank " : "rank ") + std::to_string(r) + ": " + tiers_text(f);
    }
  }
  const std::string choice =
      shard_choice_.empty() ? Mention(Option::kShard) + " " + o_.grid.shard : shard_choice_;
  Logger("train")->info(
      "{}",
      scheduler::GridLine(groups_.grid().describe(), groups_.world()->backend(), shards_, choice,
                          split_choice_, per_tier, plan_.order_to_string(), groups_.stages_text()));
  return Status::Ok();
}

void PagedTrainer::slice_block(int block, const float* full, float* local) const {
  if (o_.grid.tp == 1) {
    std::copy_n(full, layout_.blocks[block].numel, local);
    return;
  }
  SliceBlockParams(full_layout_.blocks[block], layout_.blocks[block], tp_rank(), full, local);
}

// Every tp rank's slice gathered (in rank order), each put back at its place.
Status PagedTrainer::unslice_block(int block, const float* local, float* full) {
  const int64_t n = layout_.blocks[block].numel;
  if (o_.grid.tp == 1) {
    std::copy_n(local, n, full);
    return Status::Ok();
  }
  std::vector<float> all(size_t(n) * o_.grid.tp);
  STRATA_RETURN_IF_ERROR(groups_.tp()->all_gather(local, all.data(), size_t(n) * 4).wait());
  for (int t = 0; t < o_.grid.tp; ++t) {
    UnsliceBlockParams(full_layout_.blocks[block], layout_.blocks[block], t,
                       all.data() + int64_t(t) * n, full);
  }
  return Status::Ok();
}

}  // namespace strata::internal
