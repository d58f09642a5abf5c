#include "core/kernels/matmul.h"

#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "core/kernels/bf16_math.h"
#include "core/kernels/gemm_tiles.h"
#include "core/util/check.h"

namespace strata::kernels {
namespace {

// Note [Deterministic GEMM] (gemm_tiles.h): OpenBLAS's own pool stays at one thread. Done once,
// before the first call, through a function-local static (thread-safe initialisation).
void ensure_openblas_single_threaded() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

// Tiles below ~16 MFLOP lose more to packing their operands than they gain from running in
// parallel; 8 tiles balance well over 1, 2, 4 or 8 threads. Tile sides of at least 64 keep
// OpenBLAS's micro-kernels on full panels.
constexpr double kMinTileFlops = 16e6;
constexpr int kMaxTiles = 8;
constexpr int kMinTileSide = 64;

// The `rows` x `cols` matrix stored with row stride `ld` at `x`, rounded to bf16, packed densely
// (row stride `cols`) into `out`.
void RoundedCopy(const float* x, int rows, int cols, int ld, std::vector<float>* out) {
  out->resize(static_cast<size_t>(rows) * cols);
  for (int i = 0; i < rows; ++i) {
    const float* src = x + static_cast<long>(i) * ld;
    float* dst = out->data() + static_cast<long>(i) * cols;
    for (int j = 0; j < cols; ++j) dst[j] = detail::RoundToBf16(src[j]);
  }
}

}  // namespace

namespace detail {

void sgemm_one_thread(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                      int lda, const float* B, int ldb, float beta, float* C, int ldc,
                      Dtype dtype) {
  if (M <= 0 || N <= 0) return;
  if (dtype == Dtype::kBf16 && K > 0) {
    // The operands as stored: A is M x K (K x M transposed), B is K x N (N x K transposed).
    std::vector<float> a, b;
    RoundedCopy(A, trans_a ? K : M, trans_a ? M : K, lda, &a);
    RoundedCopy(B, trans_b ? N : K, trans_b ? K : N, ldb, &b);
    sgemm_one_thread(trans_a, trans_b, M, N, K, alpha, a.data(), trans_a ? M : K, b.data(),
                     trans_b ? K : N, beta, C, ldc);
    return;
  }
  ensure_openblas_single_threaded();
  if (K <= 0) {
    // BLAS rejects lda = 0; the product is empty, so only beta applies.
    for (int i = 0; i < M; ++i) {
      float* row = C + static_cast<long>(i) * ldc;
      for (int j = 0; j < N; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int TileGrid::m_begin(int M, int i) const {
  if (i >= tiles_m) return M;
  return static_cast<int>(static_cast<long>(M) * i / tiles_m / 16 * 16);
}

int TileGrid::n_begin(int N, int j) const {
  if (j >= tiles_n) return N;
  return static_cast<int>(static_cast<long>(N) * j / tiles_n / 16 * 16);
}

TileGrid gemm_tile_grid(int M, int N, int K) {
  const double flops = 2.0 * M * N * K;
  int tiles = 1;
  while (tiles * 2 <= kMaxTiles && flops / (tiles * 2) >= kMinTileFlops) tiles *= 2;
  TileGrid grid;
  // Halve the longer side of the current tile until there are enough tiles.
  while (grid.tiles_m * grid.tiles_n < tiles) {
    const int rows = M / grid.tiles_m;
    const int cols = N / grid.tiles_n;
    const bool can_m = rows / 2 >= kMinTileSide;
    const bool can_n = cols / 2 >= kMinTileSide;
    if (can_m && (rows >= cols || !can_n)) {
      grid.tiles_m *= 2;
    } else if (can_n) {
      grid.tiles_n *= 2;
    } else {
      break;
    }
  }
  return grid;
}

TileBounds grid_m_bounds(int M, int N, int K) {
  const TileGrid grid = gemm_tile_grid(M, N, K);
  TileBounds b(grid.tiles_m + 1);
  for (int i = 0; i <= grid.tiles_m; ++i) b[i] = grid.m_begin(M, i);
  return b;
}

TileBounds grid_n_bounds(int M, int N, int K) {
  const TileGrid grid = gemm_tile_grid(M, N, K);
  TileBounds b(grid.tiles_n + 1);
  for (int j = 0; j <= grid.tiles_n; ++j) b[j] = grid.n_begin(N, j);
  return b;
}

namespace {

// The tiles of sgemm_on_tiles_k_chunks, each summing its K chunks in order (the prologue before
// the first).
// k_bounds points at k_count boundaries (a TileBounds, or two on the stack for one chunk: every
// sgemm comes through here, so it allocates nothing).
void RunTiles(bool trans_a, bool trans_b, const TileBounds& m_bounds, const TileBounds& n_bounds,
              const int* k_bounds, size_t k_count, float alpha, const float* A, int lda, const float* B,
              int ldb, float beta, float* C, int ldc, TilePrologue prologue, void* prologue_ctx,
              Dtype dtype) {
  const int tiles_m = static_cast<int>(m_bounds.size()) - 1;
  const int tiles_n = static_cast<int>(n_bounds.size()) - 1;
  if (tiles_m <= 0 || tiles_n <= 0) return;
  auto run_tile = [&](int t) {
    const int i = t / tiles_n;
    const int j = t % tiles_n;
    const int m0 = m_bounds[i], m1 = m_bounds[i + 1];
    const int n0 = n_bounds[j], n1 = n_bounds[j + 1];
    if (m0 >= m1 || n0 >= n1) return;
    if (prologue != nullptr) prologue(prologue_ctx, C, ldc, m0, m1, n0, n1);
    // Rows of op(A) are rows of A, or columns when A is stored transposed; same for op(B); a K
    // chunk [k0, k1) is columns of op(A) and rows of op(B).
    const float* a = trans_a ? A + m0 : A + static_cast<long>(m0) * lda;
    const float* b = trans_b ? B + static_cast<long>(n0) * ldb : B + n0;
    float* c_tile = C + static_cast<long>(m0) * ldc + n0;
    bool ran = false;
    for (size_t c = 0; c + 1 < k_count; ++c) {
      const int k0 = k_bounds[c], k1 = k_bounds[c + 1];
      if (k0 >= k1) continue;
      const float* a_k = trans_a ? a + static_cast<long>(k0) * lda : a + k0;
      const float* b_k = trans_b ? b + k0 : b + static_cast<long>(k0) * ldb;
      sgemm_one_thread(trans_a, trans_b, m1 - m0, n1 - n0, k1 - k0, alpha, a_k, lda, b_k, ldb,
                       ran ? 1.0f : beta, c_tile, ldc, dtype);
      ran = true;
    }
    // An empty K: only beta applies.
    if (!ran) {
      sgemm_one_thread(trans_a, trans_b, m1 - m0, n1 - n0, 0, alpha, a, lda, b, ldb, beta, c_tile,
                       ldc, dtype);
    }
  };
  const int tiles = tiles_m * tiles_n;
  // The caller's arena bounds the threads: in a one-thread arena the tiles run in order here.
  if (tiles == 1 || tbb::this_task_arena::max_concurrency() <= 1) {
    for (int t = 0; t < tiles; ++t) run_tile(t);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<int>(0, tiles, 1),
      [&](const tbb::blocked_range<int>& r) {
        for (int t = r.begin(); t < r.end(); ++t) run_tile(t);
      },
      tbb::simple_partitioner());
}

}  // namespace

void sgemm_on_tiles(bool trans_a, bool trans_b, const TileBounds& m_bounds,
                    const TileBounds& n_bounds, int K, float alpha, const float* A, int lda,
                    const float* B, int ldb, float beta, float* C, int ldc, TilePrologue prologue,
                    void* prologue_ctx, Dtype dtype) {
  const int whole_k[2] = {0, K};
  RunTiles(trans_a, trans_b, m_bounds, n_bounds, whole_k, 2, alpha, A, lda, B, ldb, beta, C, ldc,
           prologue, prologue_ctx, dtype);
}

void sgemm_on_tiles_k_chunks(bool trans_a, bool trans_b, const TileBounds& m_bounds,
                             const TileBounds& n_bounds, const TileBounds& k_bounds, float alpha,
                             const float* A, int lda, const float* B, int ldb, float beta, float* C,
                             int ldc, Dtype dtype) {
  RunTiles(trans_a, trans_b, m_bounds, n_bounds, k_bounds.data(), k_bounds.size(), alpha, A, lda,
           B, ldb, beta, C, ldc, nullptr, nullptr, dtype);
}

TileBounds CutBounds(const TileBounds& whole, const TileBounds& cuts, int r0, int r1) {
  TileBounds b = whole;
  b.insert(b.end(), cuts.begin(), cuts.end());
  b.push_back(r0);
  b.push_back(r1);
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  TileBounds range;
  for (int x : b) {
    if (x >= r0 && x <= r1) range.push_back(x - r0);
  }
  return range;
}

void sgemm_tiled(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                 int lda, const float* B, int ldb, float beta, float* C, int ldc,
                 TilePrologue prologue, void* prologue_ctx, Dtype dtype) {
  if (M <= 0 || N <= 0) return;
  sgemm_on_tiles(trans_a, trans_b, grid_m_bounds(M, N, K), grid_n_bounds(M, N, K), K, alpha, A, lda,
                 B, ldb, beta, C, ldc, prologue, prologue_ctx, dtype);
}

}  // namespace detail

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  detail::sgemm_tiled(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr,
                      nullptr);
}

void sgemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  detail::sgemm_tiled(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr,
                      nullptr, Dtype::kBf16);
}

}  // namespace strata::kernels
