#include "core/kernels/layernorm.h"

#include <cmath>
#include <vector>

#include "core/kernels/layernorm_math.h"
#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {

// Rows per task, and per partial sum of dweight/dbias (Note [Fixed partitions]).
constexpr long kRowsPerChunk = 32;

// The row functions take __restrict pointers: with six arrays in one loop the compiler gives up
// on the run-time overlap checks and would not vectorise. Callers never pass overlapping rows.
// noinline keeps the __restrict promises at a call boundary, where GCC honours them (inlined
// into the TBB lambda, the loop measured 7x slower: it fell back to the scalar version).

[[gnu::noinline]] void forward_row(float* __restrict y, float* __restrict mean,
                                   float* __restrict rstd, const float* __restrict x,
                                   const float* __restrict weight, const float* __restrict bias,
                                   int C) {
  // Two passes (mean, then squared deviations): no cancellation when |mean| >> std.
  const float m = detail::sum_lanes(x, C) / static_cast<float>(C);
  detail::Lanes acc = {};
  int i = 0;
  for (; i + detail::kLaneCount <= C; i += detail::kLaneCount) {
    detail::Lanes d;
    detail::load_lanes(d, x + i);
    d -= m;
    acc += d * d;
  }
  float sq = detail::reduce_lanes(acc);
  for (; i < C; ++i) sq += (x[i] - m) * (x[i] - m);
  const float s = detail::LayerNormRstd(sq, C);
  for (int c = 0; c < C; ++c) y[c] = detail::LayerNormOut(x[c], m, s, weight[c], bias[c]);
  *mean = m;
  *rstd = s;
}

// dx += s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) with dnorm = dy * w; adds the
// row's dweight and dbias contributions into pw, pb.
[[gnu::noinline]] void backward_row(float* __restrict dx, float* __restrict pw,
                                    float* __restrict pb, const float* __restrict dy,
                                    const float* __restrict x, const float* __restrict weight,
                                    float m, float s, int C) {
  detail::Lanes acc_dnorm = {};
  detail::Lanes acc_dnorm_norm = {};
  int i = 0;
  for (; i + detail::kLaneCount <= C; i += detail::kLaneCount) {
    detail::Lanes xv, dyv, wv;
    detail::load_lanes(xv, x + i);
    detail::load_lanes(dyv, dy + i);
    detail::load_lanes(wv, weight + i);
    const detail::Lanes norm = (xv - m) * s;
    const detail::Lanes dnorm = dyv * wv;
    acc_dnorm += dnorm;
    acc_dnorm_norm += dnorm * norm;
  }
  float sum_dnorm = detail::reduce_lanes(acc_dnorm);
  float sum_dnorm_norm = detail::reduce_lanes(acc_dnorm_norm);
  for (; i < C; ++i) {
    const float norm = detail::LayerNormNorm(x[i], m, s);
    const float dnorm = dy[i] * weight[i];
    sum_dnorm += dnorm;
    sum_dnorm_norm += dnorm * norm;
  }
  const float dnorm_mean = sum_dnorm / static_cast<float>(C);
  const float dnorm_norm_mean = sum_dnorm_norm / static_cast<float>(C);
  for (int c = 0; c < C; ++c) {
    const float norm = detail::LayerNormNorm(x[c], m, s);
    const float dnorm = dy[c] * weight[c];
    dx[c] += detail::LayerNormDinp(dnorm, dnorm_mean, norm, dnorm_norm_mean, s);
    pw[c] += dy[c] * norm;
    pb[c] += dy[c];
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      forward_row(out + r * C, mean + r, rstd + r, inp + r * C, weight, bias, C);
    }
  });
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int N, int C) {
  // One reduction for both parameter gradients: partial[0, C) is dweight, [C, 2C) is dbias.
  std::vector<float> dparams(2 * static_cast<size_t>(C), 0.0f);
  detail::reduce_rows(dparams.data(), 2 * C, N, kRowsPerChunk,
                      [&](long r0, long r1, float* partial) {
                        for (long r = r0; r < r1; ++r) {
                          backward_row(dinp + r * C, partial, partial + C, dout + r * C,
                                       inp + r * C, weight, mean[r], rstd[r], C);
                        }
                      });
  for (int c = 0; c < C; ++c) {
    dweight[c] += dparams[c];
    dbias[c] += dparams[C + c];
  }
}

}  // namespace strata::kernels
