// Comm::split: the grid's groups (parallel/grid.h) as Comms of their own, each with its own
// ranks, order and collectives, independent of the Comm they came from.
#include <gtest/gtest.h>

#include <vector>

#include "mpi_test_util.h"
#include "parallel/grid.h"

namespace strata::parallel::testing_mpi {
namespace {

// Ranks of one parity, in reverse order of their world rank (key = -rank): each group's fold is
// over its own members, in its own rank order.
TEST(CommSplit, GroupsByColorOrderedByKey) {
  Comm& world = World();
  const int n = world.size(), me = world.rank();
  auto sub = world.split(me % 2, -me);
  ASSERT_TRUE(sub.ok()) << sub.status().to_string();
  std::vector<int> members;
  for (int r = n - 1; r >= 0; --r) {
    if (r % 2 == me % 2) members.push_back(r);
  }
  ASSERT_EQ((*sub)->size(), int(members.size()));
  ASSERT_EQ(members[size_t((*sub)->rank())], me) << "reverse world order";
  // Each member's world rank, gathered in the group's order.
  std::vector<int> mine = {me}, all(members.size(), -1);
  ASSERT_TRUE((*sub)->all_gather(mine.data(), all.data(), sizeof(int)).wait().ok());
  EXPECT_EQ(all, members);
  // The fold over the group alone, and a broadcast from its rank 0 (the highest world rank).
  std::vector<double> x = {double(me) + 0.5}, sum(1);
  ASSERT_TRUE((*sub)->all_reduce_sum(x.data(), sum.data(), 1).wait().ok());
  double expected = 0;
  for (int r : members) expected = expected + (double(r) + 0.5);
  EXPECT_EQ(sum[0], expected);
  int from_root = me;
  ASSERT_TRUE((*sub)->broadcast(&from_root, sizeof(int), 0).wait().ok());
  EXPECT_EQ(from_root, members[0]);
  EXPECT_TRUE((*sub)->barrier().ok());
  // The world Comm is untouched.
  EXPECT_TRUE(world.barrier().ok());
}

// The grid's tensor-parallel groups (tp innermost): split by the other coordinates, ranked by
// the tp coordinate, each group holds exactly Grid::tp_group's ranks.
TEST(CommSplit, TheGridsTensorParallelGroups) {
  Comm& world = World();
  const int n = world.size();
  if (n % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  auto grid = Grid::Make(n, 0, 2, 1);
  ASSERT_TRUE(grid.ok());
  const GridCoord c = grid->coord(world.rank());
  auto tp = world.split(c.pp * grid->dp() + c.dp, c.tp);
  ASSERT_TRUE(tp.ok()) << tp.status().to_string();
  EXPECT_EQ((*tp)->size(), 2);
  EXPECT_EQ((*tp)->rank(), c.tp);
  std::vector<int> mine = {world.rank()}, all(2, -1);
  ASSERT_TRUE((*tp)->all_gather(mine.data(), all.data(), sizeof(int)).wait().ok());
  EXPECT_EQ(all, grid->tp_group(world.rank()));
}

TEST(CommSplit, ANegativeColorIsRefusedAndTheCommStaysUsable) {
  Comm& world = World();
  auto bad = world.split(-1, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(world.barrier().ok());
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
