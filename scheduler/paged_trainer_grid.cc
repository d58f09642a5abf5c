// PagedTrainer on the grid (parallel/grid.h): the Comms of this rank's groups, and the copies
// between the whole model (--init, --export) and this rank's tensor-parallel slice of it (Note
// [Tensor-parallel slices] in core/nn/tp_layout.h).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "scheduler/data_parallel.h"
#include "scheduler/paged_trainer_impl.h"
#include "scheduler/stage_costs.h"

namespace strata::internal {

// Note [Rank order] in parallel/grid.h: a group's color is the rank's other two coordinates, its
// key the coordinate along the group, so a group's Comm ranks run along its axis.
Status PagedTrainer::make_grid() {
  world_ = o_.grid.ranks;
  STRATA_ASSIGN_OR_RETURN(grid_,
                          parallel::Grid::Make(world_size(), o_.grid.dp, o_.grid.tp, o_.grid.pp));
  if (o_.grid.tp == 1 && o_.grid.pp == 1)
    return Status::Ok();  // the job is one data-parallel group
  const parallel::GridCoord me = grid_.coord(world_rank());
  STRATA_ASSIGN_OR_RETURN(tp_comm_, world_->split(me.pp * grid_.dp() + me.dp, me.tp));
  STRATA_ASSIGN_OR_RETURN(dp_comm_, world_->split(me.pp * grid_.tp() + me.tp, me.dp));
  o_.grid.ranks = dp_comm_.get();
  if (o_.grid.pp == 1) return Status::Ok();
  const int pipeline = me.dp * grid_.tp() + me.tp;  // its stages share dp and tp
  for (std::unique_ptr<parallel::Comm>* c : {&pp_fwd_[0], &pp_fwd_[1], &pp_bwd_[0], &pp_bwd_[1],
                                             &pp_tied_}) {
    STRATA_ASSIGN_OR_RETURN(*c, world_->split(pipeline, me.pp));
  }
  return make_stage(me.pp);
}

// This rank's stage: its blocks from --pp-partition (Note [Stage partition]), its order of
// forwards and backwards from --schedule over this data-parallel rank's micro-batches.
Status PagedTrainer::make_stage(int stage) {
  const int L = full_layout_.config.n_layer, P = o_.grid.pp;
  STRATA_ASSIGN_OR_RETURN(stage_costs_, measure_stage_costs());
  STRATA_ASSIGN_OR_RETURN(stage_blocks_,
                          scheduler::PartitionStages(o_.grid.pp_partition, P, L, stage_costs_));
  STRATA_ASSIGN_OR_RETURN(const scheduler::PipeSchedule schedule,
                          scheduler::ParsePipeSchedule(o_.grid.schedule));
  int first = 1;
  for (int s = 0; s < stage; ++s) first += stage_blocks_[s];
  pipe_.stage = stage;
  pipe_.stages = P;
  pipe_.blocks = {.first_block = first,
                  .last_block = first + stage_blocks_[stage] - 1,
                  .first = stage == 0,
                  .last = stage == P - 1};
  pipe_.steps = scheduler::StageSchedule(schedule, P, stage, rank_rows() / micro_rows());
  pipe_.in_flight = scheduler::PeakInFlight(pipe_.steps);
  for (int i = 0; i < 2; ++i) {
    pipe_.fwd[i] = pp_fwd_[i].get();
    pipe_.bwd[i] = pp_bwd_[i].get();
  }
  pipe_.tied = pp_tied_.get();
  return Status::Ok();
}

// Rank 0 measures (stage_costs.h) while the others wait, so that no rank's measurement competes
// with another's for the cores, and every rank cuts by its figures.
Result<scheduler::StageCosts> PagedTrainer::measure_stage_costs() {
  scheduler::StageCosts c;
  if (world_rank() == 0) {
    c = scheduler::MeasureStageCosts(full_layout_, micro_rows(), seq_, threads_);
  } else {
    c.blocks.assign(size_t(full_layout_.config.n_layer), 0.0);
  }
  std::vector<double> all = c.blocks;
  all.push_back(c.embedding);
  all.push_back(c.head);
  STRATA_RETURN_IF_ERROR(world_->broadcast(all.data(), all.size() * sizeof(double), 0)
                             .wait()
                             .with_context("taking rank 0's measured stage costs"));
  c.embedding = all[all.size() - 2];
  c.head = all.back();
  c.blocks.assign(all.begin(), all.end() - 2);
  return c;
}

// The first line's stages: each one's blocks and its predicted time per micro-batch (the measured
// costs of Note [Stage partition]), the schedule and what stage 0 holds in flight.
std::string PagedTrainer::stages_text() const {
  if (!piped()) return "";
  const std::vector<double> times = scheduler::StageTimes(stage_blocks_, stage_costs_);
  std::string text = "stages (" + Mention(Option::kPpPartition) + " " + o_.grid.pp_partition + "):";
  int first = 1;
  for (int s = 0; s < o_.grid.pp; ++s) {
    const int last = first + stage_blocks_[s] - 1;
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.2f ms", times[s] * 1e3);
    text += std::string(s > 0 ? "," : "") + " " + std::to_string(s) + ": blocks " +
            std::to_string(first) + "-" + std::to_string(last) + (s == 0 ? " + embedding" : "") +
            (s == o_.grid.pp - 1 ? " + head" : "") + " " + ms;
    first = last + 1;
  }
  return text + " per micro-batch; " + Mention(Option::kSchedule) + " " + o_.grid.schedule + ", " +
         std::to_string(rank_rows() / micro_rows()) + " micro-batches";
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
    STRATA_RETURN_IF_ERROR(world_->all_gather(mine.data(), all.data(), mine.size() * 8)
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
  Logger("train")->info("{}", scheduler::GridLine(grid_.describe(), world_->backend(), shards_,
                                                  choice, split_choice_, per_tier,
                                                  plan_.order_to_string(), stages_text()));
  return Status::Ok();
}

// The blocks this rank holds pages of: its stage's, the embedding on the first stage and the head
// on the last, which also keeps the embedding's replica for the tied head (every block without a
// pipeline).
std::vector<bool> PagedTrainer::held_blocks() const {
  const int n = layout_.num_blocks();
  if (!piped()) return std::vector<bool>(size_t(n), true);
  std::vector<bool> held(size_t(n), false);
  for (int b = pipe_.blocks.first_block; b <= pipe_.blocks.last_block; ++b) held[b] = true;
  held[0] = pipe_.first() || pipe_.last();
  held[n - 1] = pipe_.last();
  return held;
}

// The stage that holds block `block` (the first for the embedding, whose replica on the last
// stage holds the same values).
int PagedTrainer::stage_of(int block) const {
  if (block == 0) return 0;
  if (block == layout_.num_blocks() - 1) return o_.grid.pp - 1;
  int last = 0;
  for (int s = 0; s < o_.grid.pp; ++s) {
    last += stage_blocks_[s];
    if (block <= last) return s;
  }
  return o_.grid.pp - 1;
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
  STRATA_RETURN_IF_ERROR(tp_comm_->all_gather(local, all.data(), size_t(n) * 4).wait());
  for (int t = 0; t < o_.grid.tp; ++t) {
    UnsliceBlockParams(full_layout_.blocks[block], layout_.blocks[block], t,
                       all.data() + int64_t(t) * n, full);
  }
  return Status::Ok();
}

}  // namespace strata::internal
