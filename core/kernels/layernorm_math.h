// LayerNorm's per-element arithmetic, shared by the CPU and CUDA kernels (hd.h). A row's mean,
// sum of squared deviations and the backward's two row sums are reductions each backend does its
// own way; what is done with them is here.
#pragma once

#include "core/kernels/hd.h"
#include "core/kernels/layernorm.h"

namespace strata::kernels::detail {

// 1 / sqrt(var + eps) from the row's sum of squared deviations (biased variance, as torch).
STRATA_HD float LayerNormRstd(float sum_sq_dev, int C) {
  const float var = sum_sq_dev / static_cast<float>(C);
  return 1.0f / SqrtRn(var + kLayerNormEps);
}

STRATA_HD float LayerNormNorm(float x, float mean, float rstd) { return (x - mean) * rstd; }

STRATA_HD float LayerNormOut(float x, float mean, float rstd, float weight, float bias) {
  return (x - mean) * rstd * weight + bias;
}

// d(inp) of one element: rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dy * w.
STRATA_HD float LayerNormDinp(float dnorm, float dnorm_mean, float norm, float dnorm_norm_mean,
                              float rstd) {
  return (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd;
}

}  // namespace strata::kernels::detail
