// Private to core/kernels: the deterministic tiled sgemm behind kernels::sgemm.
//
// Note [Deterministic GEMM]
// OpenBLAS 0.3.21 (Debian, DYNAMIC_ARCH, Haswell kernels on this machine) does not give the
// same bits with 1 and 2 threads: measured on 2048x1152x384, 2048x384x1152, 384x1152x2048 and
// 256x256x64 (its threaded driver blocks the work differently from the single-thread one);
// only a few shapes (e.g. 384x384x2048) happened to agree. So Strata never lets OpenBLAS
// thread a call. Instead C is cut into a fixed grid of tiles (a function of M, N, K only),
// each tile is one single-threaded cblas_sgemm, and the tiles run as TBB tasks on the
// caller's arena. A tile's result depends only on its operands, so the output is identical
// for any number of threads, and since only TBB threads exist there is no oversubscription
// between TBB workers and OpenBLAS's pool (which, threaded, spins for a while after each
// call and would steal the cores from the element-wise kernels that follow).
// Measured on the GPT-2 shapes (2 threads, N = 2048 rows): 255-275 GFLOP/s, against 240-260
// for OpenBLAS's own 2-thread driver and 133-136 for one thread.
#pragma once

#include <vector>

#include "core/kernels/dtype.h"

namespace strata::kernels::detail {

// One single-threaded OpenBLAS sgemm, row-major (see kernels::sgemm for the arguments). Safe to
// call concurrently from several threads. Used inside kernels that parallelise themselves
// (attention runs one of these per (batch, head) task). With Dtype::kBf16 it multiplies copies
// of op(A) and op(B) rounded to bf16 (Note [bf16 compute] in dtype.h).
void sgemm_one_thread(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                      int lda, const float* B, int ldb, float beta, float* C, int ldc,
                      Dtype dtype = Dtype::kFp32);

// The tile grid of an M x N x K product: tiles_m x tiles_n tiles.
struct TileGrid {
  int tiles_m = 1;
  int tiles_n = 1;
  // Row range of tile row i and column range of tile column j (boundaries are multiples of 16
  // except the last).
  int m_begin(int M, int i) const;
  int n_begin(int N, int j) const;
};
TileGrid gemm_tile_grid(int M, int N, int K);

// Fills the rows [m0, m1) x columns [n0, n1) of C before a tile's sgemm runs (used by
// linear_forward to write the bias into the tile while it is about to be hot in cache).
using TilePrologue = void (*)(void* ctx, float* C, int ldc, int m0, int m1, int n0, int n1);

// kernels::sgemm with an optional per-tile prologue (may be nullptr).
void sgemm_tiled(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                 int lda, const float* B, int ldb, float beta, float* C, int ldc,
                 TilePrologue prologue, void* prologue_ctx, Dtype dtype = Dtype::kFp32);

// Tile boundaries along one side of C: 0 = b[0] <= b[1] <= ... <= b.back() = the side's length.
using TileBounds = std::vector<int>;
// The boundaries of gemm_tile_grid(M, N, K) along the rows and along the columns of C.
TileBounds grid_m_bounds(int M, int N, int K);
TileBounds grid_n_bounds(int M, int N, int K);

// sgemm_tiled on explicit tiles: one single-threaded sgemm per non-empty tile [m_bounds[i],
// m_bounds[i + 1]) x [n_bounds[j], n_bounds[j + 1]) of C, run as TBB tasks of the caller's arena
// (in order here in a one-thread arena). A tile's bits depend only on its operands, so the tiles
// that two calls share come out the same (linear_backward_rows uses this to compute a range of
// weight rows as exactly the whole backward's tiles over that range).
void sgemm_on_tiles(bool trans_a, bool trans_b, const TileBounds& m_bounds,
                    const TileBounds& n_bounds, int K, float alpha, const float* A, int lda,
                    const float* B, int ldb, float beta, float* C, int ldc,
                    TilePrologue prologue = nullptr, void* prologue_ctx = nullptr,
                    Dtype dtype = Dtype::kFp32);

// sgemm_on_tiles with the product's K cut at `k_bounds` (0 = k_bounds[0] <= ... <= k_bounds.back()
// = K, relative to A's columns of op(A) and B's rows of op(B) as given): each tile sums its K
// chunks in order, one single-threaded sgemm per non-empty chunk, the first with `beta` and the
// rest with beta = 1. A tile's bits depend only on its operands and its chunks, so two calls that
// run the same tiles over consecutive chunk ranges, the second with beta = 1, give the bits of
// one call over both ranges (nn_linear_backward_rows sums an input gradient over slices of the
// weight's rows this way).
void sgemm_on_tiles_k_chunks(bool trans_a, bool trans_b, const TileBounds& m_bounds,
                             const TileBounds& n_bounds, const TileBounds& k_bounds, float alpha,
                             const float* A, int lda, const float* B, int ldb, float beta, float* C,
                             int ldc, Dtype dtype = Dtype::kFp32);

// The boundaries `whole` further cut at `cuts`, those inside [r0, r1) plus its ends, relative to
// r0: the tiles of a range [r0, r1) whose ends are cuts are exactly the whole's cut tiles inside
// it (a row range of a GEMM computed alone gives the whole GEMM's bits there).
TileBounds CutBounds(const TileBounds& whole, const TileBounds& cuts, int r0, int r1);

}  // namespace strata::kernels::detail
