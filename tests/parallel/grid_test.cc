// Note [Rank order] in parallel/grid.h: tensor-parallel innermost, then data-parallel, then
// pipeline-parallel; the groups along each axis; and the refusals of a grid that does not fit.
#include "parallel/grid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata::parallel {
namespace {

TEST(Grid, RanksAreTensorInnermostThenDataThenPipeline) {
  auto g = Grid::Make(8, 2, 2, 2);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->describe(), "dp 2 x tp 2 x pp 2");
  // rank = (pp * dp_size + dp) * tp_size + tp
  EXPECT_EQ(g->coord(0), (GridCoord{.dp = 0, .tp = 0, .pp = 0}));
  EXPECT_EQ(g->coord(1), (GridCoord{.dp = 0, .tp = 1, .pp = 0}));
  EXPECT_EQ(g->coord(2), (GridCoord{.dp = 1, .tp = 0, .pp = 0}));
  EXPECT_EQ(g->coord(4), (GridCoord{.dp = 0, .tp = 0, .pp = 1}));
  EXPECT_EQ(g->coord(7), (GridCoord{.dp = 1, .tp = 1, .pp = 1}));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(g->rank_of(g->coord(r)), r);
  EXPECT_EQ(g->tp_group(5), (std::vector<int>{4, 5}));
  EXPECT_EQ(g->dp_group(5), (std::vector<int>{5, 7}));
  EXPECT_EQ(g->pp_group(5), (std::vector<int>{1, 5}));
}

TEST(Grid, EachAxisGroupsPartitionTheRanks) {
  for (auto [dp, tp, pp] : {std::tuple{3, 2, 2}, std::tuple{1, 4, 2}, std::tuple{2, 1, 3}}) {
    auto g = Grid::Make(dp * tp * pp, dp, tp, pp);
    ASSERT_TRUE(g.ok());
    for (auto group : {&Grid::tp_group, &Grid::dp_group, &Grid::pp_group}) {
      std::set<std::vector<int>> groups;
      for (int r = 0; r < g->size(); ++r) {
        const std::vector<int> members = ((*g).*group)(r);
        EXPECT_NE(std::find(members.begin(), members.end(), r), members.end());
        groups.insert(members);
      }
      size_t covered = 0;
      for (const auto& m : groups) covered += m.size();
      EXPECT_EQ(covered, size_t(g->size())) << "groups are disjoint and cover every rank";
    }
  }
}

TEST(Grid, DpDefaultsToTheRanksLeftByTpAndPp) {
  auto g = Grid::Make(12, 0, 2, 3);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->dp(), 2);
  auto one = Grid::Make(1, 0, 1, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->describe(), "dp 1 x tp 1 x pp 1");
}

TEST(Grid, AGridThatDoesNotFitTheJobIsRefusedNamingTheFlags) {
  auto product = Grid::Make(8, 2, 2, 1);
  ASSERT_FALSE(product.ok());
  EXPECT_NE(product.status().message().find("{dp} 2 x {tp} 2 x {pp} 1 = 4 ranks, and this job "
                                            "has 8"),
            std::string::npos)
      << product.status().to_string();
  // The facts, for code: the option at fault and the numbers (Note [Options in messages]).
  test_support::ExpectFault(product.status(), Option::kDp,
                            {{"dp", 2}, {"tp", 2}, {"pp", 1}, {"ranks", 8}});
  auto zero = Grid::Make(4, 0, 0, 1);
  ASSERT_FALSE(zero.ok());
  test_support::ExpectFault(zero.status(), Option::kTp, {{"got", 0}});
  auto divide = Grid::Make(6, 0, 4, 1);
  ASSERT_FALSE(divide.ok());
  EXPECT_NE(divide.status().message().find("does not divide the job's 6 ranks"),
            std::string::npos);
  EXPECT_FALSE(Grid::Make(4, 0, 0, 1).ok());
  EXPECT_FALSE(Grid::Make(4, 0, 1, -1).ok());
  EXPECT_FALSE(Grid::Make(4, -2, 1, 1).ok());
}

}  // namespace
}  // namespace strata::parallel
