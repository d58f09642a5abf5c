// Softmax and softmax cross-entropy per element and per row, shared by the CPU and CUDA kernels
// (hd.h): attention's causal softmax, the head's cross-entropy and its vocab-parallel form. The
// row maxima and sums are reductions each backend does its own way.
#pragma once

#include "core/kernels/fast_math.h"
#include "core/kernels/hd.h"

namespace strata::kernels::detail {

// exp(x - max), the unnormalised probability; subtracting the row maximum keeps every exponent
// <= 0 (no overflow).
STRATA_HD float SoftmaxExp(float x, float row_max) { return exp_approx(x - row_max); }

// Softmax backward of one element: att * (datt - sum_k att[k] datt[k]).
STRATA_HD float SoftmaxBackward(float att, float datt, float dot) { return att * (datt - dot); }

// A row's loss -log_softmax(x)[target] = max + log(sum of exp(x - max)) - x[target], in double
// (as torch's log_softmax + nll).
STRATA_HD double CrossEntropyRowLoss(float row_max, float exp_sum, float target_logit) {
  return static_cast<double>(row_max) + LogDouble(static_cast<double>(exp_sum)) -
         static_cast<double>(target_logit);
}

// dlogit += (p - onehot) * dloss, with one rounding for the target's (p - 1) * dloss.
STRATA_HD float CrossEntropyDlogit(float dlogit, float prob, bool is_target, float dloss) {
  return is_target ? dlogit + (prob - 1.0f) * dloss : dlogit + prob * dloss;
}

}  // namespace strata::kernels::detail
