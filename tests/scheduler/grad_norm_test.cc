// Note [Norm in chunk order] in scheduler/grad_norm.h: a block's sum of squares is the ordered sum
// of fixed 4 KiB chunks' partials, so ranges that start on chunk boundaries, each made apart and
// summed in order, give its bits; and it is the sum of squares to double rounding.
#include "scheduler/grad_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace strata {
namespace {

BlockSpec OddBlock(int64_t numel) {
  BlockSpec b;
  b.numel = numel;
  return b;
}

std::vector<float> Gradient(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1e-2f);
  std::vector<float> g(n);
  for (float& x : g) x = d(rng);
  return g;
}

TEST(GradNorm, RangesOnChunkBoundariesSummedInOrderGiveTheBlockSum) {
  const int64_t n = 5 * 16384 + 777;  // not a whole number of ranges or chunks
  const std::vector<float> g = Gradient(n, 3);
  const double block = BlockGradSumOfSquares(CpuKernelTable(), OddBlock(n), g.data());
  for (int64_t range_floats : {1024, 4096, 16384}) {
    std::vector<double> partials;
    for (int64_t p = 0; p < n; p += range_floats) {  // what each range's holder computes
      const int64_t len = std::min(range_floats, n - p);
      std::vector<double> mine((len + kNormChunkFloats - 1) / kNormChunkFloats);
      ChunkSumsOfSquares(CpuKernelTable(), g.data() + p, len, mine.data());
      partials.insert(partials.end(), mine.begin(), mine.end());
    }
    double sum = 0.0;
    for (double x : partials) sum += x;
    EXPECT_EQ(sum, block) << "ranges of " << range_floats << " floats";
  }
  long double exact = 0;
  for (float x : g) exact += static_cast<long double>(x) * x;
  EXPECT_NEAR(block, double(exact), 1e-12 * double(exact));
}

TEST(GradNorm, GlobalNormAddsBlocksInOrder) {
  const std::vector<double> sums = {4.0, 9.0, 12.0};
  EXPECT_EQ(GlobalGradNorm(sums), 5.0);
}

}  // namespace
}  // namespace strata
