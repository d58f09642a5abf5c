// kernels::cuda::sgemm (the row-major GEMM of core/kernels/matmul.h) and gemm.cuh's Gemm, through
// cuBLAS.
//
// cuBLAS is column-major. A row-major (M, N) matrix with row stride ld is, read column-major,
// its transpose (N, M) with leading dimension ld. So row-major C = op(A) @ op(B) is computed as
// the column-major C^T = op(B)^T @ op(A)^T: the cuBLAS call with the operands swapped (B first,
// A second), m = N, n = M, and each operand keeping its own transpose flag and leading
// dimension. cuBLAS's leading-dimension rules then read, in row-major terms: lda >= K (A not
// transposed, stored M x K) or M (transposed, stored K x M); ldb >= N or K likewise; ldc >= N:
// exactly the row strides of the matrices as stored.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/device/cuda_blas.h"
#include "core/device/cuda_launch.h"
#include "core/kernels/bf16_math.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/gemm.cuh"

namespace strata::kernels::cuda {
namespace {

using ::strata::cuda::BlocksFor;
using ::strata::cuda::CheckBlas;
using ::strata::cuda::CheckCuda;
using ::strata::cuda::Cublas;
using ::strata::cuda::kThreads;

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

// Note [bf16 operand copies]
// cuBLAS reads bf16 operands, so each GEMM at bf16 first rounds its fp32 operands into copies in
// stream scratch. Each copy holds only the matrices' own elements (rows x cols of each of
// `batch` matrices), not the whole span from the first to the last (a head's q inside a packed
// qkv row spans every head's q, k and v), and its rows start a multiple of 8 elements (16 bytes)
// apart, as cuBLAS's tensor-memory-accelerator kernels want. On the H200 (tests/gpu/README.md)
// this took the copies from 45% to 28% of a bf16 one-block step's kernel time (51 -> 34 ms a
// step). cuBLAS still picked its sm75 kernels for most bf16 GEMMs after it, so aligned operand
// rows alone do not decide that choice (the fp32 output of the logits, rows of 50257, is not
// aligned, for one).
inline constexpr int kBf16RowAlign = 8;  // bf16 elements per 16 bytes

// out (batch x rows x ldo) = x (batch matrices `stride` apart, rows x cols, row stride ld)
// rounded to bf16 (detail::RoundToBf16, so the CPU's bits). The padding columns are not written
// (cuBLAS never reads them). Each thread converts elements of one row; rows are taken
// grid-stride over y = batch x rows, columns over x.
__global__ void RoundToBf16Rows(const float* x, __nv_bfloat16* out, long total_rows, int rows,
                                int cols, long ld, long long stride, int ldo) {
  for (long r = blockIdx.y; r < total_rows; r += gridDim.y) {
    const long i = r / rows, row = r % rows;
    const float* src = x + i * stride + row * ld;
    __nv_bfloat16* dst = out + r * ldo;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) {
      const auto bits = static_cast<uint32_t>(detail::FloatBits(detail::RoundToBf16(src[c])));
      __nv_bfloat16_raw raw;
      raw.x = static_cast<uint16_t>(bits >> 16);  // the low 16 bits are zero after rounding
      dst[c] = raw;
    }
  }
}

// A bf16 copy of an operand (Note [bf16 operand copies]) in stream scratch: `batch` matrices
// of rows x cols, `stride` apart (0: one matrix shared by every batch entry, copied once), row
// stride ld. bf16() is nullptr after an error, which is recorded; ld() and stride() are the
// copy's, for cuBLAS.
class Bf16Operand {
 public:
  Bf16Operand(const float* x, int rows, int cols, int ld, long long stride, int batch,
              const char* what)
      : ld_((cols + kBf16RowAlign - 1) / kBf16RowAlign * kBf16RowAlign),
        copies_(stride == 0 ? 1 : batch),
        stride_(stride == 0 ? 0 : static_cast<long long>(rows) * ld_),
        scratch_(static_cast<size_t>(copies_) * rows * ld_ * sizeof(__nv_bfloat16), what) {
    if (scratch_.get() == nullptr) return;
    const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
    const long total_rows = static_cast<long>(copies_) * rows;
    const dim3 grid((cols + kThreads - 1) / kThreads,
                    static_cast<unsigned>(total_rows < 65535 ? total_rows : 65535));
    RoundToBf16Rows<<<grid, kThreads, 0, l.stream>>>(x, scratch_.as<__nv_bfloat16>(), total_rows,
                                                     rows, cols, ld, stride, ld_);
    ok_ = CheckCuda(cudaGetLastError(), what);
  }
  const __nv_bfloat16* bf16() const { return ok_ ? scratch_.as<__nv_bfloat16>() : nullptr; }
  int ld() const { return ld_; }
  long long stride() const { return stride_; }

 private:
  int ld_;
  int copies_;
  long long stride_;
  ::strata::cuda::StreamScratch scratch_;
  bool ok_ = false;
};

void Bf16Gemm(cublasOperation_t op_a, cublasOperation_t op_b, int M, int N, int K, float alpha,
              const float* A, int lda, long long stride_a, const float* B, int ldb,
              long long stride_b, float beta, float* C, int ldc, long long stride_c, int batch,
              const char* what) {
  const bool ta = op_a == CUBLAS_OP_T, tb = op_b == CUBLAS_OP_T;
  // Strides are ignored when batch is 1 (gemm.cuh): one matrix each.
  const Bf16Operand a(A, ta ? K : M, ta ? M : K, lda, batch == 1 ? 0 : stride_a, batch, what);
  const Bf16Operand b(B, tb ? N : K, tb ? K : N, ldb, batch == 1 ? 0 : stride_b, batch, what);
  if (a.bf16() == nullptr || b.bf16() == nullptr) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  if (batch == 1) {
    CheckBlas(Cublas().cublasGemmEx(l.blas, op_b, op_a, N, M, K, &alpha, b.bf16(), CUDA_R_16BF,
                                    b.ld(), a.bf16(), CUDA_R_16BF, a.ld(), &beta, C, CUDA_R_32F,
                                    ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              what);
    return;
  }
  CheckBlas(Cublas().cublasGemmStridedBatchedEx(
                l.blas, op_b, op_a, N, M, K, &alpha, b.bf16(), CUDA_R_16BF, b.ld(), b.stride(),
                a.bf16(), CUDA_R_16BF, a.ld(), a.stride(), &beta, C, CUDA_R_32F, ldc, stride_c,
                batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            what);
}

}  // namespace

void Gemm(Dtype dtype, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          int lda, long long stride_a, const float* B, int ldb, long long stride_b, float beta,
          float* C, int ldc, long long stride_c, int batch, const char* what) {
  if (M <= 0 || N <= 0 || batch <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  if (K <= 0) {
    // The product is empty: C = beta * C. Done here, not by cuBLAS, because callers pass
    // lda = K = 0 for an empty A (linear with C = 0), which cuBLAS rejects (lda >= max(1, K)).
    if (beta == 1.0f) return;  // 1 * x == x for every x
    for (int i = 0; i < batch; ++i) {
      ScaleRows<<<BlocksFor(static_cast<long>(M) * N), kThreads, 0, l.stream>>>(C + i * stride_c, M,
                                                                                N, ldc, beta);
      if (!CheckCuda(cudaGetLastError(), what)) return;
    }
    return;
  }
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (dtype == Dtype::kBf16) {
    Bf16Gemm(op_a, op_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
             batch, what);
    return;
  }
  // Column-major C^T (N, M) = op(B)^T (N, K) @ op(A)^T (K, M); see the top of the file.
  if (batch == 1) {
    CheckBlas(
        Cublas().cublasSgemm_v2(l.blas, op_b, op_a, N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
        what);
    return;
  }
  CheckBlas(
      Cublas().cublasSgemmStridedBatched(l.blas, op_b, op_a, N, M, K, &alpha, B, ldb, stride_b, A,
                                         lda, stride_a, &beta, C, ldc, stride_c, batch),
      what);
}

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  Gemm(Dtype::kFp32, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1,
       "sgemm");
}

void sgemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  Gemm(Dtype::kBf16, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1,
       "sgemm_bf16");
}

}  // namespace strata::kernels::cuda
