// The one cuBLAS GEMM call of the CUDA kernels, at a compute dtype (matmul.cu). Compiled by nvcc
// (C++17) only.
#pragma once

#include "core/kernels/dtype.h"

namespace strata::kernels::cuda {

// Row-major C_i = alpha * op(A_i) @ op(B_i) + beta * C_i for i < batch, X_i = X + i * stride_x
// (strides are ignored when batch is 1), on the current launch's stream (cuda_launch.h).
// - kFp32: cublasSgemm (batch 1) or cublasSgemmStridedBatched, fp32 math without TF32.
// - kBf16 (Note [bf16 compute] in core/kernels/dtype.h): A and B are first rounded to bf16 copies
//   (RoundToBf16, the CPU's rounding) in stream scratch, then cublasGemmEx /
//   cublasGemmStridedBatchedEx with bf16 inputs, fp32 output and CUBLAS_COMPUTE_32F: the tensor
//   cores, accumulating in fp32. The copies cover each operand's stored span (first to last
//   element read), with the operand's own leading dimension and stride.
// K <= 0 gives C_i = beta * C_i (0 when beta is 0, dropping NaNs), as the CPU's sgemm. Errors
// are recorded on the stream; `what` names the caller in them.
void Gemm(Dtype dtype, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
          const float* A, int lda, long long stride_a, const float* B, int ldb,
          long long stride_b, float beta, float* C, int ldc, long long stride_c, int batch,
          const char* what);

}  // namespace strata::kernels::cuda
