// The linear layer's CUDA kernels (core/kernels/linear.h): the CPU's row chunks (Note [Linear
// forward in row chunks]) as one cuBLAS GEMM per chunk.
//
// Note [CUDA linear GEMMs per chunk]
// The contract (kernel_table.h) asks every backend for: linear_forward == linear_forward_rows
// over [0, C) and linear_backward == linear_backward_rows over [0, C), bit for bit, and a row
// slice on chunk boundaries gives the whole linear's bits of every element it writes. cuBLAS,
// like OpenBLAS, picks its algorithm (tile sizes, split-K, reduction order) from the shape of the
// call, so an element's bits depend on the shape of the GEMM it is computed in, not only on its
// operands: one backward GEMM over [0, C) and a slice's GEMM over [r0, r1) are different shapes
// and may differ in bits. So the backward, like the forward, is one GEMM per chunk (per chunk's
// part inside [r0, r1)): a slice on chunk boundaries issues exactly the GEMMs the whole linear
// issues for its rows, with the same shapes and leading dimensions, hence (cuBLAS being
// deterministic for a given call on a given GPU) the same bits. Operand alignment, which cuBLAS
// also looks at, matches too when the slice's buffers are aligned like the whole's: chunk
// boundaries are multiples of 16 rows, so the offsets of the operands move by multiples of
// 64 bytes. The GPU's bits are not the CPU's (different GEMM orders); only this equality within
// one backend is promised.
#include <cuda_runtime.h>

#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/gemm.cuh"
#include "core/kernels/cuda/reduce.cuh"
#include "core/kernels/linear.h"
#include "core/util/check.h"

namespace strata::kernels::cuda {
namespace {

// out (N, OC): every row = bias.
__global__ void FillRows(float* out, const float* bias, int N, int OC) {
  const long n = static_cast<long>(N) * OC;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    out[idx] = bias[idx % OC];
  }
}

// One GEMM of the linear at `dtype` (gemm.cuh), not batched.
void LinearGemm(Dtype dtype, bool trans_a, bool trans_b, int M, int N, int K, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc, const char* what) {
  Gemm(dtype, trans_a, trans_b, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, what);
}

// The chunk that starts at row 0: out = bias + inp[:, 0:rows] @ weight[0:rows, :] (rows may be
// 0: out = bias, or zeros without bias; Gemm's K = 0 path), as the CPU's FirstChunk.
void FirstChunk(Dtype dtype, float* out, const float* inp, const float* weight, const float* bias,
                int N, int C, int OC, int rows) {
  constexpr const char* kWhat = "linear_forward_rows";
  if (bias == nullptr) {
    LinearGemm(dtype, false, false, N, OC, rows, inp, C, weight, OC, 0.0f, out, OC, kWhat);
    return;
  }
  const long n = static_cast<long>(N) * OC;
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  FillRows<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(out, bias, N,
                                                                                    OC);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "linear_forward_rows: FillRows")) return;
  LinearGemm(dtype, false, false, N, OC, rows, inp, C, weight, OC, 1.0f, out, OC, kWhat);
}

// linear_forward_rows at a compute dtype.
void ForwardRows(Dtype dtype, float* out, const float* inp, const float* weight_rows,
                 const float* bias, int N, int C, int OC, int r0, int r1) {
  STRATA_CHECK(0 <= r0 && r0 <= r1 && r1 <= C && IsLinearChunkBegin(C, r0) &&
               IsLinearChunkBegin(C, r1))
      << "linear_forward_rows: rows [" << r0 << ", " << r1 << ") of C = " << C
      << " are not chunk boundaries (Note [Linear forward in row chunks])";
  ForEachForwardChunk(
      C, r0, r1, [&](int b) { FirstChunk(dtype, out, inp, weight_rows, bias, N, C, OC, b); },
      [&](int a, int b) {
        LinearGemm(dtype, false, false, N, OC, b - a, inp + a, C,
                   weight_rows + static_cast<long>(a - r0) * OC, OC, 1.0f, out, OC,
                   "linear_forward_rows");
      });
}

// linear_backward_rows at a compute dtype; dbias sums the fp32 dout (not a GEMM).
void BackwardRows(Dtype dtype, float* dinp, float* dweight_rows, float* dbias, const float* dout,
                  const float* inp, const float* weight_rows, int N, int C, int OC, int r0,
                  int r1) {
  STRATA_CHECK(0 <= r0 && r0 <= r1 && r1 <= C)
      << "linear_backward_rows: rows [" << r0 << ", " << r1 << ") of C = " << C;
  // One pair of GEMMs per chunk's part inside [r0, r1) (Note [CUDA linear GEMMs per chunk]).
  for (int c = 0; c < kLinearChunks; ++c) {
    const int chunk_a = LinearChunkBegin(C, c), chunk_b = LinearChunkBegin(C, c + 1);
    const int a = chunk_a > r0 ? chunk_a : r0;
    const int b = chunk_b < r1 ? chunk_b : r1;
    if (a >= b) continue;
    const float* w = weight_rows + static_cast<long>(a - r0) * OC;  // W[a:b, :], (b-a, OC)
    if (dinp != nullptr) {
      // dinp[:, a:b] (N, b-a) += dout (N, OC) @ W[a:b, :]^T.
      LinearGemm(dtype, false, true, N, b - a, OC, dout, OC, w, OC, 1.0f, dinp + a, C,
                 "linear_backward_rows: dinp");
    }
    // dweight[a:b, :] (b-a, OC) += inp[:, a:b]^T @ dout, inp stored (N, C).
    LinearGemm(dtype, true, false, b - a, OC, N, inp + a, C, dout, OC, 1.0f,
               dweight_rows + static_cast<long>(a - r0) * OC, OC, "linear_backward_rows: dweight");
  }
  if (dbias != nullptr) {
    // Over all N rows, whatever [r0, r1), as the CPU kernel.
    ColumnSumsAccumulate(dbias, dout, N, OC, OC, "linear_backward_rows: dbias");
  }
}

}  // namespace

void linear_forward_rows(float* out, const float* inp, const float* weight_rows, const float* bias,
                         int N, int C, int OC, int r0, int r1) {
  ForwardRows(Dtype::kFp32, out, inp, weight_rows, bias, N, C, OC, r0, r1);
}

void linear_backward_rows(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                          const float* inp, const float* weight_rows, int N, int C, int OC, int r0,
                          int r1) {
  BackwardRows(Dtype::kFp32, dinp, dweight_rows, dbias, dout, inp, weight_rows, N, C, OC, r0, r1);
}

void linear_forward_rows_bf16(float* out, const float* inp, const float* weight_rows,
                              const float* bias, int N, int C, int OC, int r0, int r1) {
  ForwardRows(Dtype::kBf16, out, inp, weight_rows, bias, N, C, OC, r0, r1);
}

void linear_backward_rows_bf16(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                               const float* inp, const float* weight_rows, int N, int C, int OC,
                               int r0, int r1) {
  BackwardRows(Dtype::kBf16, dinp, dweight_rows, dbias, dout, inp, weight_rows, N, C, OC, r0, r1);
}

void linear_forward_bf16(float* out, const float* inp, const float* weight, const float* bias,
                         int N, int C, int OC) {
  linear_forward_rows_bf16(out, inp, weight, bias, N, C, OC, 0, C);
}

void linear_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, int N, int C, int OC) {
  linear_backward_rows_bf16(dinp, dweight, dbias, dout, inp, weight, N, C, OC, 0, C);
}

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC) {
  linear_forward_rows(out, inp, weight, bias, N, C, OC, 0, C);
}

void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  linear_backward_rows(dinp, dweight, dbias, dout, inp, weight, N, C, OC, 0, C);
}

}  // namespace strata::kernels::cuda
