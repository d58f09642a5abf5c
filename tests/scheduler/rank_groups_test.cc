#include "scheduler/rank_groups.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "parallel/local_comm.h"

namespace strata::scheduler {
namespace {

RankGroupsInput Input(const GridOptions* grid) {
  RankGroupsInput in;
  in.grid = grid;
  in.n_layer = 2;
  in.batch = 8;
  in.micro_batch = 2;
  in.measure_stage_costs = [](int) -> StageCosts {
    ADD_FAILURE() << "stage costs are measured only under --pp";
    return {};
  };
  return in;
}

// Without a Comm the job is one rank: no groups, every block held, the rows per micro-batch.
TEST(RankGroups, OneRankHasNoGroupsAndHoldsEveryBlock) {
  GridOptions grid;
  auto g = MakeRankGroups(Input(&grid));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->world(), nullptr);
  EXPECT_EQ(g->world_size(), 1);
  EXPECT_EQ(g->dp(), nullptr);
  EXPECT_EQ(g->tp(), nullptr);
  EXPECT_FALSE(g->piped());
  EXPECT_EQ(g->rank_rows(), 8);
  EXPECT_EQ(g->micro_rows(), 2);
  EXPECT_EQ(g->held_blocks(4), std::vector<bool>(4, true));
  EXPECT_EQ(g->stage_of(0, 4), 0);
  EXPECT_EQ(g->stage_of(3, 4), 0);
  EXPECT_EQ(g->stages_text(), "");
}

// With only data parallelism the data-parallel group is the job's Comm itself (no split), and
// --micro-batch 0 runs a rank's rows as one micro-batch.
TEST(RankGroups, DataParallelGroupIsTheJobsComm) {
  std::unique_ptr<parallel::Comm> world = parallel::CreateLocalComm();
  GridOptions grid;
  grid.ranks = world.get();
  RankGroupsInput in = Input(&grid);
  in.micro_batch = 0;
  auto g = MakeRankGroups(in);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->world(), world.get());
  EXPECT_EQ(g->dp(), world.get());
  EXPECT_EQ(g->grid().describe(), parallel::Grid().describe());
  EXPECT_EQ(g->rank_rows(), 8);
  EXPECT_EQ(g->micro_rows(), 8);
}

// A grid the job's ranks cannot fill is Grid::Make's refusal, before any Comm is split.
TEST(RankGroups, GridLargerThanTheJobIsRefused) {
  std::unique_ptr<parallel::Comm> world = parallel::CreateLocalComm();
  GridOptions grid;
  grid.ranks = world.get();
  grid.pp = 2;
  auto g = MakeRankGroups(Input(&grid));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << g.status().to_string();
}

}  // namespace
}  // namespace strata::scheduler
