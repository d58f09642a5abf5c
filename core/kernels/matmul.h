#pragma once
// Thin wrappers over OpenBLAS sgemm (row-major), the one place Strata calls BLAS.
//
// Threads and determinism (Note [Deterministic GEMM] in gemm_tiles.h): OpenBLAS's threaded
// driver gives different bits than its single-thread one, so sgemm never lets OpenBLAS thread
// a call. It cuts C into a fixed grid of tiles (chosen from M, N, K alone) and runs each tile as
// a single-threaded OpenBLAS call on a TBB task of the caller's arena: results are
// bit-identical for any thread count, and TBB's threads are the only ones computing.
namespace strata::kernels {
// C (M, N) = alpha * op(A) @ op(B) + beta * C, row-major; op(X) = X^T when trans_x.
// lda/ldb/ldc are the row strides of A, B, C as stored. The tiles run on the caller's
// tbb::task_arena (whose size bounds the threads used). Calls from several threads at once are
// safe when their C do not overlap. K = 0 leaves C = beta * C; M = 0 or N = 0 does nothing.
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);
// sgemm with the operands rounded to bf16 as the tiles read them, products accumulated in fp32
// (Note [bf16 compute] in dtype.h); the same tiles, so the same determinism.
void sgemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc);
}  // namespace strata::kernels
