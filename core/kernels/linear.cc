#include "core/kernels/linear.h"

#include "core/kernels/gemm_tiles.h"
#include "core/kernels/matmul.h"
#include "core/kernels/partition.h"

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

}  // namespace

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC) {
  if (bias == nullptr) {
    sgemm(false, false, N, OC, C, 1.0f, inp, C, weight, OC, 0.0f, out, OC);
    return;
  }
  BiasFill ctx{bias};
  detail::sgemm_tiled(false, false, N, OC, C, 1.0f, inp, C, weight, OC, 1.0f, out, OC, &fill_bias,
                      &ctx);
}

void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  if (dinp != nullptr) {
    // dinp (N, C) += dout (N, OC) @ weight^T, weight stored (C, OC).
    sgemm(false, true, N, C, OC, 1.0f, dout, OC, weight, OC, 1.0f, dinp, C);
  }
  // dweight (C, OC) += inp^T @ dout, inp stored (N, C).
  sgemm(true, false, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC);
  if (dbias != nullptr) {
    detail::reduce_rows(dbias, OC, N, kBiasRowsPerChunk, [&](long r0, long r1, float* partial) {
      for (long r = r0; r < r1; ++r) {
        const float* row = dout + r * OC;
        for (int o = 0; o < OC; ++o) partial[o] += row[o];
      }
    });
  }
}

}  // namespace strata::kernels
