#include "core/kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/kernels/gemm_tiles.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::expect_near_all;
using testing::random_vector;

// C = alpha op(A) op(B) + beta C in double, with the same storage conventions as sgemm.
std::vector<double> sgemm_ref(bool ta, bool tb, int M, int N, int K, double alpha,
                              const std::vector<float>& A, int lda, const std::vector<float>& B,
                              int ldb, double beta, const std::vector<float>& C, int ldc) {
  std::vector<double> out(C.begin(), C.end());
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) {
        const double a =
            ta ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k];
        const double b =
            tb ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j];
        s += a * b;
      }
      out[static_cast<size_t>(i) * ldc + j] =
          alpha * s + beta * C[static_cast<size_t>(i) * ldc + j];
    }
  }
  return out;
}

struct Case {
  int M, N, K;
};

class SgemmTest : public ::testing::TestWithParam<Case> {};

// Every transpose combination, leading dimensions wider than the matrices (sub-matrix views, as
// attention uses on qkv), alpha and beta not 1: the elements outside the view must not change.
TEST_P(SgemmTest, MatchesDoubleReferenceForAllTransposes) {
  const Case c = GetParam();
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const int a_rows = ta ? c.K : c.M, a_cols = ta ? c.M : c.K;
      const int b_rows = tb ? c.N : c.K, b_cols = tb ? c.K : c.N;
      const int lda = a_cols + 3, ldb = b_cols + 5, ldc = c.N + 2;
      auto A = random_vector(static_cast<size_t>(a_rows) * lda, 1);
      auto B = random_vector(static_cast<size_t>(b_rows) * ldb, 2);
      auto C = random_vector(static_cast<size_t>(c.M) * ldc, 3);
      auto want = sgemm_ref(ta, tb, c.M, c.N, c.K, 0.5, A, lda, B, ldb, -1.5, C, ldc);
      sgemm(ta, tb, c.M, c.N, c.K, 0.5f, A.data(), lda, B.data(), ldb, -1.5f, C.data(), ldc);
      expect_near_all(C, want, 1e-5, 1e-5,
                      "ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SgemmTest,
                         ::testing::Values(Case{1, 1, 1}, Case{5, 7, 3}, Case{33, 17, 65},
                                           // Large enough for several tiles, odd sizes.
                                           Case{300, 270, 200}, Case{129, 530, 260}));

TEST(SgemmTest, EmptyProductOnlyScalesByBeta) {
  std::vector<float> C = {1.0f, 2.0f, 3.0f, 4.0f};
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
}

TEST(SgemmTest, TileGridCoversTheMatrix) {
  // Small products are one tile; GPT-2 sized ones are cut into several, with no tile below
  // 64 on a side and the boundaries covering [0, M) x [0, N).
  const detail::TileGrid one = detail::gemm_tile_grid(256, 256, 64);
  EXPECT_EQ(one.tiles_m * one.tiles_n, 1);
  for (const Case& c :
       {Case{2048, 1152, 384}, Case{384, 1536, 2048}, Case{2048, 256, 384}, Case{100, 5000, 300}}) {
    const detail::TileGrid g = detail::gemm_tile_grid(c.M, c.N, c.K);
    EXPECT_GT(g.tiles_m * g.tiles_n, 1) << c.M << "x" << c.N << "x" << c.K;
    EXPECT_EQ(g.m_begin(c.M, 0), 0);
    EXPECT_EQ(g.m_begin(c.M, g.tiles_m), c.M);
    EXPECT_EQ(g.n_begin(c.N, 0), 0);
    EXPECT_EQ(g.n_begin(c.N, g.tiles_n), c.N);
    for (int i = 0; i < g.tiles_m; ++i) EXPECT_GE(g.m_begin(c.M, i + 1) - g.m_begin(c.M, i), 48);
    for (int j = 0; j < g.tiles_n; ++j) EXPECT_GE(g.n_begin(c.N, j + 1) - g.n_begin(c.N, j), 48);
  }
}

// sgemm on its own grid's tiles is sgemm, bit for bit; on a finer grid (the grid cut again, as
// linear_backward_rows cuts it at the chunk boundaries) it is the same product, and the tiles
// that two grids share come out the same.
TEST(SgemmTest, ExplicitTilesGiveTheTilesBits) {
  const int M = 300, N = 270, K = 200;
  const auto A = testing::random_vector(M * K, 1), B = testing::random_vector(K * N, 2);
  const auto C0 = testing::random_vector(M * N, 3);
  auto want = C0, same_grid = C0, finer = C0;
  sgemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 1.0f, want.data(), N);
  detail::sgemm_on_tiles(false, false, detail::grid_m_bounds(M, N, K),
                         detail::grid_n_bounds(M, N, K), K, 1.0f, A.data(), K, B.data(), N, 1.0f,
                         same_grid.data(), N);
  EXPECT_TRUE(testing::bitwise_equal(same_grid, want));
  // Rows cut at 48 and 64 as well; columns [0, 32) and [32, 270).
  detail::TileBounds m_bounds = detail::grid_m_bounds(M, N, K);
  m_bounds.insert(m_bounds.begin() + 1, {48, 64});
  detail::sgemm_on_tiles(false, false, m_bounds, {0, 32, N}, K, 1.0f, A.data(), K, B.data(), N,
                         1.0f, finer.data(), N);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(finer[i], want[i], 1e-4 * (1.0 + std::abs(want[i]))) << i;
  }
  // An empty list of tiles does nothing.
  auto untouched = C0;
  detail::sgemm_on_tiles(false, false, {0}, {0, N}, K, 1.0f, A.data(), K, B.data(), N, 1.0f,
                         untouched.data(), N);
  EXPECT_TRUE(testing::bitwise_equal(untouched, C0));
}

}  // namespace
}  // namespace strata::kernels
