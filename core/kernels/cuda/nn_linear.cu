// The nn.Linear-layout linear's CUDA kernels (core/kernels/nn_linear.h): one cuBLAS GEMM per
// chunk of the weight's rows, for each of the three products (Note [CUDA linear GEMMs per chunk]
// in linear.cu: cuBLAS picks its algorithm by the call's shape, so a slice on chunk boundaries
// gives the whole's bits only when it issues exactly the whole's GEMMs for its rows).
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/gemm.cuh"
#include "core/kernels/linear.h"
#include "core/util/check.h"

namespace strata::kernels::cuda {
namespace {

void Gemm1(Dtype dtype, bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc, const char* what) {
  Gemm(dtype, trans_a, trans_b, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, what);
}

// f(a, b) for each non-empty chunk [a, b) of `out` rows inside [r0, r1), in order.
template <typename F>
void ForEachChunk(const char* what, int out, int r0, int r1, const F& f) {
  STRATA_CHECK(0 <= r0 && r0 <= r1 && r1 <= out && IsLinearChunkBegin(out, r0) &&
               IsLinearChunkBegin(out, r1))
      << what << ": rows [" << r0 << ", " << r1 << ") of out = " << out
      << " are not chunk boundaries (Note [nn.Linear in row chunks])";
  for (int c = 0; c < kLinearChunks; ++c) {
    const int a = LinearChunkBegin(out, c), b = LinearChunkBegin(out, c + 1);
    if (a < b && a >= r0 && b <= r1) f(a, b);
  }
}

void ForwardRows(Dtype dtype, float* y, int ldy, const float* x, const float* w_rows, int N, int in,
                 int out, int r0, int r1) {
  ForEachChunk("nn_linear_forward_rows", out, r0, r1, [&](int a, int b) {
    // y[:, a:b] = x @ W[a:b]^T.
    Gemm1(dtype, false, true, N, b - a, in, x, in, w_rows + static_cast<long>(a - r0) * in, in,
          0.0f, y + a, ldy, "nn_linear_forward_rows");
  });
}

void BackwardRows(Dtype dtype, float* dx, bool overwrite, float* dw_rows, const float* dy, int ldy,
                  const float* x, const float* w_rows, int N, int in, int out, int r0, int r1) {
  bool first = overwrite;
  ForEachChunk("nn_linear_backward_rows", out, r0, r1, [&](int a, int b) {
    const float* w = w_rows + static_cast<long>(a - r0) * in;
    // dW[a:b] += dy[:, a:b]^T @ x; dx (+)= dy[:, a:b] @ W[a:b].
    Gemm1(dtype, true, false, b - a, in, N, dy + a, ldy, x, in, 1.0f,
          dw_rows + static_cast<long>(a - r0) * in, in, "nn_linear_backward_rows: dw");
    Gemm1(dtype, false, false, N, in, b - a, dy + a, ldy, w, in, first ? 0.0f : 1.0f, dx, in,
          "nn_linear_backward_rows: dx");
    first = false;
  });
}

}  // namespace

void nn_linear_forward_rows(float* y, int ldy, const float* x, const float* w_rows, int N, int in,
                            int out, int r0, int r1) {
  ForwardRows(Dtype::kFp32, y, ldy, x, w_rows, N, in, out, r0, r1);
}

void nn_linear_backward_rows(float* dx, bool overwrite, float* dw_rows, const float* dy, int ldy,
                             const float* x, const float* w_rows, int N, int in, int out, int r0,
                             int r1) {
  BackwardRows(Dtype::kFp32, dx, overwrite, dw_rows, dy, ldy, x, w_rows, N, in, out, r0, r1);
}

void nn_linear_forward_rows_bf16(float* y, int ldy, const float* x, const float* w_rows, int N,
                                 int in, int out, int r0, int r1) {
  ForwardRows(Dtype::kBf16, y, ldy, x, w_rows, N, in, out, r0, r1);
}

void nn_linear_backward_rows_bf16(float* dx, bool overwrite, float* dw_rows, const float* dy,
                                  int ldy, const float* x, const float* w_rows, int N, int in,
                                  int out, int r0, int r1) {
  BackwardRows(Dtype::kBf16, dx, overwrite, dw_rows, dy, ldy, x, w_rows, N, in, out, r0, r1);
}

}  // namespace strata::kernels::cuda
