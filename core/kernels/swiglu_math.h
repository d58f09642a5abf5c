// SwiGLU per element, shared by the CPU and CUDA kernels (hd.h). The exponential is fast_math.h's
// (the same bits on both backends), the rest is the form torch computes silu and its derivative
// in: x / (1 + exp(-x)) and s * (1 + x * (1 - s)).
#pragma once

#include "core/kernels/fast_math.h"
#include "core/kernels/hd.h"

namespace strata::kernels::detail {

STRATA_HD float Silu(float g) { return g / (1.0f + exp_approx(-g)); }

STRATA_HD float SwigluOut(float g, float u) { return Silu(g) * u; }

// d(gate) of one element: dout * u * silu'(g), silu'(g) = s * (1 + g * (1 - s)), s = sigmoid(g).
STRATA_HD float SwigluDgate(float g, float u, float dout) {
  const float s = 1.0f / (1.0f + exp_approx(-g));
  return dout * u * (s * (1.0f + g * (1.0f - s)));
}

STRATA_HD float SwigluDup(float g, float dout) { return dout * Silu(g); }

}  // namespace strata::kernels::detail
