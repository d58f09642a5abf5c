#include "core/kernels/linear.h"

#include <algorithm>

#include "core/kernels/gemm_tiles.h"
#include "core/kernels/matmul.h"
#include "core/kernels/partition.h"
#include "core/util/check.h"

namespace strata::kernels {
namespace {

// Rows per partial sum of dbias (Note [Fixed partitions]): 2048 rows give 32 partials.
constexpr long kBiasRowsPerChunk = 64;

struct BiasFill {
  const float* bias;
};

// Writes the bias into the tile just before its GEMM accumulates on top of it (beta = 1), so
// the bias costs no separate pass over `out`.
void fill_bias(void* ctx, float* C, int ldc, int m0, int m1, int n0, int n1) {
  const float* bias = static_cast<const BiasFill*>(ctx)->bias;
  for (int i = m0; i < m1; ++i) {
    float* row = C + static_cast<long>(i) * ldc;
    for (int j = n0; j < n1; ++j) row[j] = bias[j];
  }
}

// The chunk that starts at row 0: out = bias + inp[:, 0:rows] @ weight[0:rows, :] (rows may be
// 0: out = bias, or zeros without bias).
void FirstChunk(Dtype dtype, float* out, const float* inp, const float* weight, const float* bias,
                int N, int C, int OC, int rows) {
  if (bias == nullptr) {
    detail::sgemm_tiled(false, false, N, OC, rows, 1.0f, inp, C, weight, OC, 0.0f, out, OC, nullptr,
                        nullptr, dtype);
    return;
  }
  BiasFill ctx{bias};
  detail::sgemm_tiled(false, false, N, OC, rows, 1.0f, inp, C, weight, OC, 1.0f, out, OC,
                      &fill_bias, &ctx, dtype);
}

// The backward's tile boundaries along the weight rows for the rows [r0, r1), relative to r0:
// `whole` (the boundaries of the whole linear's GEMM) cut at the chunk boundaries. A range on
// chunk boundaries gets exactly the whole's tiles inside it.
detail::TileBounds SliceBounds(const detail::TileBounds& whole, int C, int r0, int r1) {
  return detail::CutBounds(whole, LinearChunkBounds(C), r0, r1);
}

}  // namespace

int LinearChunkBegin(int C, int c) {
  if (c <= 0) return 0;
  if (c >= kLinearChunks) return C;
  return static_cast<int>(static_cast<long>(C) * c / kLinearChunks / 16 * 16);
}

std::vector<int> LinearChunkBounds(int C) {
  std::vector<int> b(kLinearChunks + 1);
  for (int c = 0; c <= kLinearChunks; ++c) b[size_t(c)] = LinearChunkBegin(C, c);
  return b;
}

bool IsLinearChunkBegin(int C, int r) {
  for (int c = 0; c <= kLinearChunks; ++c) {
    if (LinearChunkBegin(C, c) == r) return true;
  }
  return false;
}

namespace {

// linear_forward_rows at a compute dtype (the GEMM operands rounded to bf16 or not).
void ForwardRows(Dtype dtype, float* out, const float* inp, const float* weight_rows,
                 const float* bias, int N, int C, int OC, int r0, int r1) {
  STRATA_CHECK(0 <= r0 && r0 <= r1 && r1 <= C && IsLinearChunkBegin(C, r0) &&
               IsLinearChunkBegin(C, r1))
      << "linear_forward_rows: rows [" << r0 << ", " << r1 << ") of C = " << C
      << " are not chunk boundaries (Note [Linear forward in row chunks])";
  ForEachForwardChunk(
      C, r0, r1, [&](int b) { FirstChunk(dtype, out, inp, weight_rows, bias, N, C, OC, b); },
      [&](int a, int b) {
        detail::sgemm_tiled(false, false, N, OC, b - a, 1.0f, inp + a, C,
                            weight_rows + static_cast<long>(a - r0) * OC, OC, 1.0f, out, OC,
                            nullptr, nullptr, dtype);
      });
}

// linear_backward_rows at a compute dtype; dbias sums the fp32 dout (not a GEMM).
void BackwardRows(Dtype dtype, float* dinp, float* dweight_rows, float* dbias, const float* dout,
                  const float* inp, const float* weight_rows, int N, int C, int OC, int r0,
                  int r1) {
  STRATA_CHECK(0 <= r0 && r0 <= r1 && r1 <= C)
      << "linear_backward_rows: rows [" << r0 << ", " << r1 << ") of C = " << C;
  // Tiles along the weight rows: the whole GEMM's, cut at the chunk boundaries (Note [Linear
  // forward in row chunks]); the slice [r0, r1) runs those inside it.
  if (dinp != nullptr) {
    // dinp[:, r0:r1] (N, r1-r0) += dout (N, OC) @ weight_rows^T, weight_rows stored (r1-r0, OC).
    detail::sgemm_on_tiles(false, true, detail::grid_m_bounds(N, C, OC),
                           SliceBounds(detail::grid_n_bounds(N, C, OC), C, r0, r1), OC, 1.0f, dout,
                           OC, weight_rows, OC, 1.0f, dinp + r0, C, nullptr, nullptr, dtype);
  }
  // dweight_rows (r1-r0, OC) += inp[:, r0:r1]^T @ dout, inp stored (N, C).
  detail::sgemm_on_tiles(true, false, SliceBounds(detail::grid_m_bounds(C, OC, N), C, r0, r1),
                         detail::grid_n_bounds(C, OC, N), N, 1.0f, inp + r0, C, dout, OC, 1.0f,
                         dweight_rows, OC, nullptr, nullptr, dtype);
  if (dbias != nullptr) {
    detail::reduce_rows(dbias, OC, N, kBiasRowsPerChunk, [&](long n0, long n1, float* partial) {
      for (long r = n0; r < n1; ++r) {
        const float* row = dout + r * OC;
        for (int o = 0; o < OC; ++o) partial[o] += row[o];
      }
    });
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

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC) {
  linear_forward_rows(out, inp, weight, bias, N, C, OC, 0, C);
}

void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  linear_backward_rows(dinp, dweight, dbias, dout, inp, weight, N, C, OC, 0, C);
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

}  // namespace strata::kernels
