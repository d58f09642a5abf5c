// GELU (tanh approximation) per element, shared by the CPU and CUDA kernels (hd.h).
//
// Note [GELU through the sigmoid]
// 0.5 * (1 + tanh(u)) == sigmoid(2u), so gelu(x) = x * sigmoid(2u), u = sqrt(2/pi)(x +
// 0.044715x^3). Same function as torch's tanh form, but without the cancellation of 1 + tanh(u) for
// negative x (where torch's float result keeps only a few correct bits), and one vectorisable
// exp instead of a libm tanhf call per element.
#pragma once

#include "core/kernels/fast_math.h"
#include "core/kernels/hd.h"

namespace strata::kernels::detail {

inline constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;

STRATA_HD float GeluForward(float x) {
  const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return x * sigmoid_approx(2.0f * u);
}

// gelu'(x). With e = exp(-2u) and s = 1 / (1 + e): 1 + tanh(u) = 2s, 1 - tanh(u)^2 = 4 s (1 - s),
// and 1 - s = e * s without cancellation.
STRATA_HD float GeluGrad(float x) {
  const float u = kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float e = exp_approx(-2.0f * u);
  const float s = 1.0f / (1.0f + e);
  const float du = kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return s + 2.0f * x * s * (e * s) * du;
}

}  // namespace strata::kernels::detail
