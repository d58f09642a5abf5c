#include "scheduler/rank_groups.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/util/option.h"

namespace strata::scheduler {

// Note [Rank order] in parallel/grid.h: a group's color is the rank's other two coordinates, its
// key the coordinate along the group, so a group's Comm ranks run along its axis.
Result<RankGroups> MakeRankGroups(const RankGroupsInput& in) {
  const GridOptions& o = *in.grid;
  RankGroups g;
  g.world_ = o.ranks;
  g.pp_partition_ = o.pp_partition;
  g.schedule_ = o.schedule;
  STRATA_ASSIGN_OR_RETURN(g.grid_, parallel::Grid::Make(g.world_size(), o.dp, o.tp, o.pp));
  if (o.tp > 1 || o.pp > 1) {
    const parallel::GridCoord me = g.grid_.coord(g.world_rank());
    STRATA_ASSIGN_OR_RETURN(g.tp_comm_, g.world_->split(me.pp * g.grid_.dp() + me.dp, me.tp));
    STRATA_ASSIGN_OR_RETURN(g.dp_comm_, g.world_->split(me.pp * g.grid_.tp() + me.tp, me.dp));
  }
  g.rank_rows_ = in.batch / (g.dp() != nullptr ? g.dp()->size() : 1);
  g.micro_rows_ = in.micro_batch > 0 ? in.micro_batch : g.rank_rows_;
  if (o.pp == 1) return g;
  const parallel::GridCoord me = g.grid_.coord(g.world_rank());
  const int pipeline = me.dp * g.grid_.tp() + me.tp;  // its stages share dp and tp
  for (std::unique_ptr<parallel::Comm>* c :
       {&g.pp_fwd_[0], &g.pp_fwd_[1], &g.pp_bwd_[0], &g.pp_bwd_[1], &g.pp_tied_}) {
    STRATA_ASSIGN_OR_RETURN(*c, g.world_->split(pipeline, me.pp));
  }
  STRATA_RETURN_IF_ERROR(g.make_stage(in, me.pp));
  return g;
}

// This rank's stage: its blocks from --pp-partition (Note [Stage partition]), its order of
// forwards and backwards from --schedule over this data-parallel rank's micro-batches.
Status RankGroups::make_stage(const RankGroupsInput& in, int stage) {
  const int L = in.n_layer, P = grid_.pp();
  STRATA_ASSIGN_OR_RETURN(stage_costs_, measure_stage_costs(in));
  STRATA_ASSIGN_OR_RETURN(stage_blocks_, PartitionStages(pp_partition_, P, L, stage_costs_));
  STRATA_ASSIGN_OR_RETURN(const PipeSchedule schedule, ParsePipeSchedule(schedule_));
  int first = 1;
  for (int s = 0; s < stage; ++s) first += stage_blocks_[s];
  pipe_.stage = stage;
  pipe_.stages = P;
  pipe_.blocks = {.first_block = first,
                  .last_block = first + stage_blocks_[stage] - 1,
                  .first = stage == 0,
                  .last = stage == P - 1};
  pipe_.steps = StageSchedule(schedule, P, stage, rank_rows_ / micro_rows_);
  pipe_.in_flight = PeakInFlight(pipe_.steps);
  for (int i = 0; i < 2; ++i) {
    pipe_.fwd[i] = pp_fwd_[i].get();
    pipe_.bwd[i] = pp_bwd_[i].get();
  }
  pipe_.tied = pp_tied_.get();
  return Status::Ok();
}

// Rank 0 measures while the others wait, and every rank cuts by its figures.
Result<StageCosts> RankGroups::measure_stage_costs(const RankGroupsInput& in) const {
  StageCosts c;
  if (world_rank() == 0) {
    c = in.measure_stage_costs(micro_rows_);
  } else {
    c.blocks.assign(size_t(in.n_layer), 0.0);
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

// The costs are Note [Stage partition]'s measured ones; stage 0 holds the embedding, the last
// stage the head.
std::string RankGroups::stages_text() const {
  if (!piped()) return "";
  const std::vector<double> times = StageTimes(stage_blocks_, stage_costs_);
  std::string text = "stages (" + Mention(Option::kPpPartition) + " " + pp_partition_ + "):";
  int first = 1;
  for (int s = 0; s < grid_.pp(); ++s) {
    const int last = first + stage_blocks_[s] - 1;
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.2f ms", times[s] * 1e3);
    text += std::string(s > 0 ? "," : "") + " " + std::to_string(s) + ": blocks " +
            std::to_string(first) + "-" + std::to_string(last) + (s == 0 ? " + embedding" : "") +
            (s == grid_.pp() - 1 ? " + head" : "") + " " + ms;
    first = last + 1;
  }
  return text + " per micro-batch; " + Mention(Option::kSchedule) + " " + schedule_ + ", " +
         std::to_string(rank_rows_ / micro_rows_) + " micro-batches";
}

std::vector<bool> RankGroups::held_blocks(int num_blocks) const {
  const int n = num_blocks;
  if (!piped()) return std::vector<bool>(size_t(n), true);
  std::vector<bool> held(size_t(n), false);
  for (int b = pipe_.blocks.first_block; b <= pipe_.blocks.last_block; ++b) held[b] = true;
  held[0] = pipe_.first() || pipe_.last();
  held[n - 1] = pipe_.last();
  return held;
}

int RankGroups::stage_of(int block, int num_blocks) const {
  if (block == 0) return 0;
  if (block == num_blocks - 1) return grid_.pp() - 1;
  int last = 0;
  for (int s = 0; s < grid_.pp(); ++s) {
    last += stage_blocks_[s];
    if (block <= last) return s;
  }
  return grid_.pp() - 1;
}

}  // namespace strata::scheduler
