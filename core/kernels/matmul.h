#pragma once
// Thin wrappers over OpenBLAS sgemm (row-major), the one place Strata calls BLAS.
namespace strata::kernels {
// C (M, N) = alpha * op(A) @ op(B) + beta * C, row-major; op(X) = X^T when trans_x.
// lda/ldb/ldc are the row strides of A, B, C as stored.
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);
// Sets the number of threads OpenBLAS uses for every later sgemm (process-wide in OpenBLAS).
void set_blas_threads(int threads);
}  // namespace strata::kernels
