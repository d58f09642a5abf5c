#include "core/kernels/adamw.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {

// Elements per task (Note [Fixed partitions]).
constexpr long kChunk = 16384;
// Elements per partial sum of sum_of_squares.
constexpr long kSquaresChunk = 65536;

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, long n,
                  const AdamWParams& hp, float grad_scale) {
  // The scalars are computed as torch computes them (Python floats, i.e. double) and rounded to
  // float once, as torch does when it applies a Python scalar to a float tensor.
  const double lr = hp.lr;
  const double beta1 = hp.beta1;
  const double beta2 = hp.beta2;
  const auto step = static_cast<double>(hp.step);
  const float decay = static_cast<float>(1.0 - lr * hp.weight_decay);
  const float b1 = hp.beta1;
  const float one_minus_b1 = static_cast<float>(1.0 - beta1);
  const float b2 = hp.beta2;
  const float one_minus_b2 = static_cast<float>(1.0 - beta2);
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const float neg_step_size = static_cast<float>(-(lr / bias_correction1));
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float eps = hp.eps;
  detail::for_each_chunk(n, kChunk, [&](long i0, long i1) {
    for (long i = i0; i < i1; ++i) {
      // torch.optim.AdamW, single-tensor path, in its order:
      const float g = grad[i] * grad_scale;
      float p = param[i] * decay;                         // param.mul_(1 - lr*wd)
      const float mi = m[i] * b1 + one_minus_b1 * g;      // exp_avg.mul_(b1).add_(g, 1-b1)
      const float vi = v[i] * b2 + one_minus_b2 * g * g;  // exp_avg_sq.mul_(b2).addcmul_
      const float denom = std::sqrt(vi) / bias_correction2_sqrt + eps;
      p = p + neg_step_size * mi / denom;  // param.addcdiv_(m, denom, -ss)
      param[i] = p;
      m[i] = mi;
      v[i] = vi;
    }
  });
}

double sum_of_squares(const float* x, long n) {
  if (n <= 0) return 0.0;
  const long chunks = (n + kSquaresChunk - 1) / kSquaresChunk;
  std::vector<double> partials(static_cast<size_t>(chunks), 0.0);
  detail::for_each_chunk(chunks, 1, [&](long k, long) {
    const long i0 = k * kSquaresChunk;
    const long i1 = std::min(n, i0 + kSquaresChunk);
    // Eight double lanes, combined in a fixed order: vectorisable and deterministic.
    double lanes[8] = {};
    long i = i0;
    for (; i + 8 <= i1; i += 8) {
      for (int l = 0; l < 8; ++l) {
        const double d = x[i + l];
        lanes[l] += d * d;
      }
    }
    for (int l = 0; i < i1; ++i, ++l) {
      const double d = x[i];
      lanes[l] += d * d;
    }
    partials[k] = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
                  ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  });
  double total = 0.0;
  for (double p : partials) total += p;
  return total;
}

float clip_coefficient(double total_norm, float max_norm) {
  return static_cast<float>(std::min(1.0, max_norm / (total_norm + 1e-6)));
}

}  // namespace strata::kernels
