// FoldInRankOrder and PaddedChunkCount: the host side of Note [Deterministic reductions].
#include "parallel/rank_fold.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace strata::parallel {
namespace {

TEST(RankFold, LeftFoldInRankOrderInTheElementType) {
  // 3 ranks, 2 elements: ((1e8 + 1) + -1e8) is 0 in float (1e8 + 1 rounds to 1e8), while
  // (1e8 + -1e8) + 1 would be 1. In double the same sum is exactly 1.
  const std::vector<float> chunks = {1e8f, 1.0f, 1.0f, 2.0f, -1e8f, 3.0f};
  std::vector<float> out(2);
  FoldInRankOrder(chunks.data(), 2, 3, out.data());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 6.0f);
  const std::vector<double> dchunks = {1e8, 1.0, -1e8};
  double dout = 0;
  FoldInRankOrder(dchunks.data(), 1, 3, &dout);
  EXPECT_EQ(dout, 1.0);
}

TEST(RankFold, OutMayBeChunkZero) {
  std::vector<float> chunks = {1.0f, 2.0f, 10.0f, 20.0f};
  FoldInRankOrder(chunks.data(), 2, 2, chunks.data());
  EXPECT_EQ(chunks[0], 11.0f);
  EXPECT_EQ(chunks[1], 22.0f);
}

TEST(RankFold, OneRankIsACopy) {
  const std::vector<double> chunk = {0.1, -0.0, 3e300};
  std::vector<double> out(3);
  FoldInRankOrder(chunk.data(), 3, 1, out.data());
  EXPECT_EQ(std::memcmp(out.data(), chunk.data(), 3 * sizeof(double)), 0);
}

TEST(RankFold, PaddedChunkCountIsTheCeiling) {
  EXPECT_EQ(PaddedChunkCount(0, 4), 0u);
  EXPECT_EQ(PaddedChunkCount(8, 4), 2u);
  EXPECT_EQ(PaddedChunkCount(9, 4), 3u);
  EXPECT_EQ(PaddedChunkCount(3, 4), 1u);
  EXPECT_EQ(PaddedChunkCount(7, 1), 7u);
}

}  // namespace
}  // namespace strata::parallel
