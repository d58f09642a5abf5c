// kernels::cuda::sgemm: the row-major GEMM of core/kernels/matmul.h through cuBLAS.
//
// cuBLAS is column-major. A row-major (M, N) matrix with row stride ld is, read column-major,
// its transpose (N, M) with leading dimension ld. So row-major C = op(A) @ op(B) is computed as
// the column-major C^T = op(B)^T @ op(A)^T: cublasSgemm with the operands swapped (B first, A
// second), m = N, n = M, and each operand keeping its own transpose flag and leading dimension.
// cuBLAS's leading-dimension rules then read, in row-major terms: lda >= K (A not transposed,
// stored M x K) or M (transposed, stored K x M); ldb >= N or K likewise; ldc >= N: exactly the
// row strides of the matrices as stored.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"

namespace strata::kernels::cuda {
namespace {

// C (M, N), row stride ldc: C = beta * C, with beta == 0 writing zeros (not 0 * C, which would
// keep NaNs), as the CPU's K = 0 path.
__global__ void ScaleRows(float* C, int M, int N, int ldc, float beta) {
  const long n = static_cast<long>(M) * N;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    float* c = C + (idx / N) * ldc + idx % N;
    *c = beta == 0.0f ? 0.0f : beta * *c;
  }
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  if (K <= 0) {
    // The product is empty: C = beta * C. Done here, not by cuBLAS, because callers pass
    // lda = K = 0 for an empty A (linear with C = 0), which cuBLAS rejects (lda >= max(1, K)).
    if (beta == 1.0f) return;  // 1 * x == x for every x
    const long n = static_cast<long>(M) * N;
    ScaleRows<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(C, M, N, ldc,
                                                                                       beta);
    ::strata::cuda::CheckCuda(cudaGetLastError(), "sgemm: ScaleRows");
    return;
  }
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Column-major C^T (N, M) = op(B)^T (N, K) @ op(A)^T (K, M); see the top of the file.
  ::strata::cuda::CheckBlas(
      cublasSgemm(l.blas, op_b, op_a, N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
      "sgemm: cublasSgemm");
}

}  // namespace strata::kernels::cuda
