#include "core/kernels/layernorm.h"

#include <cmath>
#include <vector>

#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {

// Rows per task, and per partial sum of dweight/dbias (Note [Fixed partitions]).
constexpr long kRowsPerChunk = 32;

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const float* x = inp + r * C;
      float* y = out + r * C;
      // Two passes (mean, then squared deviations): no cancellation when |mean| >> std.
      const float m = detail::sum_lanes(x, C) / static_cast<float>(C);
      float lanes[16] = {};
      int i = 0;
      for (; i + 16 <= C; i += 16) {
        for (int l = 0; l < 16; ++l) lanes[l] += (x[i + l] - m) * (x[i + l] - m);
      }
      for (int l = 0; i < C; ++i, ++l) lanes[l] += (x[i] - m) * (x[i] - m);
      const float var = detail::sum_lanes(lanes, 16) / static_cast<float>(C);  // biased, as torch
      const float s = 1.0f / std::sqrt(var + kLayerNormEps);
      for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
      mean[r] = m;
      rstd[r] = s;
    }
  });
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int N, int C) {
  // One reduction for both parameter gradients: partial[0, C) is dweight, [C, 2C) is dbias.
  std::vector<float> dparams(2 * static_cast<size_t>(C), 0.0f);
  detail::reduce_rows(
      dparams.data(), 2 * C, N, kRowsPerChunk, [&](long r0, long r1, float* partial) {
        float* pw = partial;
        float* pb = partial + C;
        for (long r = r0; r < r1; ++r) {
          const float* x = inp + r * C;
          const float* dy = dout + r * C;
          float* dx = dinp + r * C;
          const float m = mean[r];
          const float s = rstd[r];
          // dnorm = dy * w; dx = s * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)).
          float l1[16] = {};
          float l2[16] = {};
          int i = 0;
          for (; i + 16 <= C; i += 16) {
            for (int l = 0; l < 16; ++l) {
              const float norm = (x[i + l] - m) * s;
              const float dnorm = dy[i + l] * weight[i + l];
              l1[l] += dnorm;
              l2[l] += dnorm * norm;
            }
          }
          for (int l = 0; i < C; ++i, ++l) {
            const float norm = (x[i] - m) * s;
            const float dnorm = dy[i] * weight[i];
            l1[l] += dnorm;
            l2[l] += dnorm * norm;
          }
          const float dnorm_mean = detail::sum_lanes(l1, 16) / static_cast<float>(C);
          const float dnorm_norm_mean = detail::sum_lanes(l2, 16) / static_cast<float>(C);
          for (int c = 0; c < C; ++c) {
            const float norm = (x[c] - m) * s;
            const float dnorm = dy[c] * weight[c];
            dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
            pw[c] += dy[c] * norm;
            pb[c] += dy[c];
          }
        }
      });
  for (int c = 0; c < C; ++c) {
    dweight[c] += dparams[c];
    dbias[c] += dparams[C + c];
  }
}

}  // namespace strata::kernels
