// RankGroups: one rank's place in the job's grid (parallel/grid.h, docs/parallel.md "The
// grid"), built once at setup from --dp / --tp / --pp: the Comms of its data-, tensor- and
// pipeline-parallel groups (split from the job's Comm), this data-parallel rank's share of the
// step's rows, and under --pp its pipeline stage (pipe_stage.h): the blocks --pp-partition gives
// it and the order --schedule runs its micro-batches in.
//
// Ownership: owns the group Comms and the PipeStage, whose Comm pointers point into them (a
// move keeps them valid: the Comms live on the heap). The job's Comm (`world`) is borrowed and
// must outlive it.
// Threads: MakeRankGroups from the setup thread, collective over the job's ranks (Comm::split,
// and rank 0's stage costs broadcast under --pp); the accessors from any thread once built.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "parallel/comm.h"
#include "parallel/grid.h"
#include "scheduler/pipe_stage.h"
#include "scheduler/pipeline_plan.h"
#include "scheduler/train_options.h"

namespace strata::scheduler {

struct RankGroupsInput {
  // --dp, --tp, --pp, --schedule, --pp-partition; grid->ranks: the job's ranks (nullptr: one).
  const GridOptions* grid = nullptr;
  int n_layer = 0;      // transformer blocks, cut into the stages
  int batch = 0;        // --batch: the step's rows, split over the data-parallel ranks
  int micro_batch = 0;  // --micro-batch: rows per micro-batch; 0: a data-parallel rank's rows
  // Under --pp, on rank 0 only (the others wait, so that no measurement competes with another
  // for the cores): the stage costs --pp-partition auto balances for micro-batches of
  // `micro_rows` rows (stage_costs.h). Every rank cuts by rank 0's figures.
  std::function<StageCosts(int micro_rows)> measure_stage_costs;
};

class RankGroups {
 public:
  RankGroups() = default;  // one rank, before MakeRankGroups
  RankGroups(RankGroups&&) = default;
  RankGroups& operator=(RankGroups&&) = default;

  // The job's ranks (nullptr: one rank) and this rank's place among them.
  parallel::Comm* world() const { return world_; }
  int world_rank() const { return world_ != nullptr ? world_->rank() : 0; }
  int world_size() const { return world_ != nullptr ? world_->size() : 1; }
  const parallel::Grid& grid() const { return grid_; }
  // This rank's data-parallel group: the job's Comm when --tp and --pp are 1.
  parallel::Comm* dp() const { return dp_comm_ != nullptr ? dp_comm_.get() : world_; }
  // This rank's tensor-parallel group (nullptr without --tp or --pp).
  parallel::Comm* tp() const { return tp_comm_.get(); }
  // The rows of the step's --batch this data-parallel rank runs, and per micro-batch.
  int rank_rows() const { return rank_rows_; }
  int micro_rows() const { return micro_rows_; }

  // Pipeline parallelism (--pp above 1): this rank's stage, the schedule's figures.
  bool piped() const { return grid_.pp() > 1; }
  const PipeStage& pipe() const { return pipe_; }
  // The blocks (`num_blocks` of the layout, embedding and head included) this rank holds pages
  // of: its stage's, the embedding on the first stage and the head on the last, which also keeps
  // the embedding's replica for the tied head (every block without a pipeline).
  std::vector<bool> held_blocks(int num_blocks) const;
  // The stage that holds block `block` (the first for the embedding, whose replica on the last
  // stage holds the same values).
  int stage_of(int block, int num_blocks) const;
  // The first line's stages ("" without a pipeline): each one's blocks and predicted time per
  // micro-batch, the schedule and the micro-batches.
  std::string stages_text() const;

 private:
  friend Result<RankGroups> MakeRankGroups(const RankGroupsInput& in);
  Status make_stage(const RankGroupsInput& in, int stage);
  Result<StageCosts> measure_stage_costs(const RankGroupsInput& in) const;

  parallel::Comm* world_ = nullptr;
  parallel::Grid grid_;
  int rank_rows_ = 0, micro_rows_ = 0;
  std::unique_ptr<parallel::Comm> dp_comm_, tp_comm_;  // --tp / --pp: the grid's groups
  std::unique_ptr<parallel::Comm> pp_fwd_[2], pp_bwd_[2], pp_tied_;  // the pipeline's
  StageCosts stage_costs_;
  std::vector<int> stage_blocks_;        // transformer blocks per stage
  std::string pp_partition_, schedule_;  // as given, for stages_text
  PipeStage pipe_;
};

// Errors: Grid::Make's (InvalidArgument naming the flag), the Comms' splits and broadcast,
// PartitionStages' and ParsePipeSchedule's (InvalidArgument for a bad --pp-partition or
// --schedule).
Result<RankGroups> MakeRankGroups(const RankGroupsInput& in);

}  // namespace strata::scheduler
