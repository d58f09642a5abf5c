// RMSNorm's per-element arithmetic, shared by the CPU and CUDA kernels (hd.h). A row's sum of
// squares and the backward's row sum are reductions each backend does its own way; what is done
// with them is here.
#pragma once

#include "core/kernels/hd.h"

namespace strata::kernels::detail {

// 1 / sqrt(mean(x^2) + eps) from the row's sum of squares (torch.rsqrt(variance + eps), with the
// division and square root correctly rounded on both backends).
STRATA_HD float RmsNormRstd(float sum_sq, int C, float eps) {
  return 1.0f / SqrtRn(sum_sq / static_cast<float>(C) + eps);
}

// Hugging Face multiplies the normalised value by the weight last: w * (x * rstd).
STRATA_HD float RmsNormOut(float x, float rstd, float weight) { return weight * (x * rstd); }

// d(inp) of one element: rstd * (dnorm - norm * mean(dnorm * norm)), dnorm = dy * w; the mean
// term is the derivative of rstd with respect to the row.
STRATA_HD float RmsNormDinp(float dnorm, float norm, float dnorm_norm_mean, float rstd) {
  return (dnorm - norm * dnorm_norm_mean) * rstd;
}

}  // namespace strata::kernels::detail
