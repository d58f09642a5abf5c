// AdamW per element, shared by the CPU and CUDA kernels (hd.h), and the float scalars of one
// update, computed once on the host.
#pragma once

#include <cmath>

#include "core/kernels/adamw.h"
#include "core/kernels/hd.h"

namespace strata::kernels::detail {

// The float scalars of one update, in torch's rounding (see AdamWScalarsOf).
struct AdamWScalars {
  float decay, b1, one_minus_b1, b2, one_minus_b2, neg_step_size, bias_correction2_sqrt, eps,
      grad_scale;
};

// The scalars are computed as torch computes them (Python floats, i.e. double) and rounded to
// float once, as torch does when it applies a Python scalar to a float tensor. Host only.
inline AdamWScalars AdamWScalarsOf(const AdamWParams& hp, float grad_scale) {
  const double lr = hp.lr;
  const double beta1 = hp.beta1;
  const double beta2 = hp.beta2;
  const auto step = static_cast<double>(hp.step);
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  return AdamWScalars{static_cast<float>(1.0 - lr * hp.weight_decay),
                      hp.beta1,
                      static_cast<float>(1.0 - beta1),
                      hp.beta2,
                      static_cast<float>(1.0 - beta2),
                      static_cast<float>(-(lr / bias_correction1)),
                      static_cast<float>(std::sqrt(bias_correction2)),
                      hp.eps,
                      grad_scale};
}

// One element, in torch.optim.AdamW's single-tensor order.
STRATA_HD void AdamWElement(float& param, float grad, float& m, float& v, const AdamWScalars& k) {
  const float g = grad * k.grad_scale;
  const float p = param * k.decay;                     // param.mul_(1 - lr * wd)
  const float mi = m * k.b1 + k.one_minus_b1 * g;      // exp_avg.mul_(b1).add_(g, alpha=1-b1)
  const float vi = v * k.b2 + k.one_minus_b2 * g * g;  // exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2)
  const float denom = SqrtRn(vi) / k.bias_correction2_sqrt + k.eps;
  param = p + k.neg_step_size * mi / denom;  // param.addcdiv_(exp_avg, denom, -step)
  m = mi;
  v = vi;
}

}  // namespace strata::kernels::detail
