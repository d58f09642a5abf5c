#include "core/kernels/nn_linear.h"

#include "core/kernels/gemm_tiles.h"
#include "core/kernels/linear.h"
#include "core/util/check.h"

namespace strata::kernels {
namespace {

void CheckRange(const char* what, int out, int r0, int r1) {
  STRATA_CHECK(0 <= r0 && r0 <= r1 && r1 <= out && IsLinearChunkBegin(out, r0) &&
               IsLinearChunkBegin(out, r1))
      << what << ": rows [" << r0 << ", " << r1 << ") of out = " << out
      << " are not chunk boundaries (Note [nn.Linear in row chunks])";
}

void ForwardRows(Dtype dtype, float* y, int ldy, const float* x, const float* w_rows, int N, int in,
                 int out, int r0, int r1) {
  CheckRange("nn_linear_forward_rows", out, r0, r1);
  // y[:, r0:r1] (N, r1-r0) = x (N, in) @ w_rows^T, w_rows stored (r1-r0, in).
  detail::sgemm_on_tiles(
      false, true, detail::grid_m_bounds(N, out, in),
      detail::CutBounds(detail::grid_n_bounds(N, out, in), LinearChunkBounds(out), r0, r1), in,
      1.0f, x, in, w_rows, in, 0.0f, y + r0, ldy, nullptr, nullptr, dtype);
}

void BackwardRows(Dtype dtype, float* dx, bool overwrite, float* dw_rows, const float* dy, int ldy,
                  const float* x, const float* w_rows, int N, int in, int out, int r0, int r1) {
  CheckRange("nn_linear_backward_rows", out, r0, r1);
  // dw_rows (r1-r0, in) += dy[:, r0:r1]^T @ x, dy stored (N, ldy).
  detail::sgemm_on_tiles(
      true, false,
      detail::CutBounds(detail::grid_m_bounds(out, in, N), LinearChunkBounds(out), r0, r1),
      detail::grid_n_bounds(out, in, N), N, 1.0f, dy + r0, ldy, x, in, 1.0f, dw_rows, in, nullptr,
      nullptr, dtype);
  // dx (N, in) (+)= dy[:, r0:r1] (N, r1-r0) @ w_rows, over the whole dx's tiles, chunk by chunk.
  detail::sgemm_on_tiles_k_chunks(false, false, detail::grid_m_bounds(N, in, out),
                                  detail::grid_n_bounds(N, in, out),
                                  detail::CutBounds({}, LinearChunkBounds(out), r0, r1), 1.0f,
                                  dy + r0, ldy, w_rows, in, overwrite ? 0.0f : 1.0f, dx, in, dtype);
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

}  // namespace strata::kernels
