#include "core/kernels/rmsnorm.h"

#include <vector>

#include "core/kernels/partition.h"
#include "core/kernels/rmsnorm_math.h"

namespace strata::kernels {
namespace {

// Rows per task, and per partial sum of dweight (Note [Fixed partitions]).
constexpr long kRowsPerChunk = 32;

// noinline with __restrict, as layernorm.cc's rows: GCC honours the promises at a call boundary
// and vectorises the loops.
[[gnu::noinline]] void forward_row(float* __restrict y, float* __restrict rstd,
                                   const float* __restrict x, const float* __restrict weight,
                                   int C, float eps) {
  const float s = detail::RmsNormRstd(detail::dot_lanes(x, x, C), C, eps);
  for (int c = 0; c < C; ++c) y[c] = detail::RmsNormOut(x[c], s, weight[c]);
  *rstd = s;
}

// dx += s * (dnorm - norm * mean(dnorm * norm)) with dnorm = dy * w and norm = x * s; adds the
// row's dweight contribution dy * norm into pw.
[[gnu::noinline]] void backward_row(float* __restrict dx, float* __restrict pw,
                                    const float* __restrict dy, const float* __restrict x,
                                    const float* __restrict weight, float s, int C) {
  detail::Lanes acc = {};
  int i = 0;
  for (; i + detail::kLaneCount <= C; i += detail::kLaneCount) {
    detail::Lanes xv, dyv, wv;
    detail::load_lanes(xv, x + i);
    detail::load_lanes(dyv, dy + i);
    detail::load_lanes(wv, weight + i);
    acc += (dyv * wv) * (xv * s);
  }
  float sum = detail::reduce_lanes(acc);
  for (; i < C; ++i) sum += (dy[i] * weight[i]) * (x[i] * s);
  const float mean = sum / static_cast<float>(C);
  for (int c = 0; c < C; ++c) {
    const float norm = x[c] * s;
    dx[c] += detail::RmsNormDinp(dy[c] * weight[c], norm, mean, s);
    pw[c] += dy[c] * norm;
  }
}

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                     float eps) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) forward_row(out + r * C, rstd + r, inp + r * C, weight, C, eps);
  });
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int N, int C) {
  detail::reduce_rows(dweight, C, N, kRowsPerChunk, [&](long r0, long r1, float* partial) {
    for (long r = r0; r < r1; ++r) {
      backward_row(dinp + r * C, partial, dout + r * C, inp + r * C, weight, rstd[r], C);
    }
  });
}

}  // namespace strata::kernels
