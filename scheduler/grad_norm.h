// The global gradient norm in one canonical order, shared by the in-memory trainer and the
// Engine so that both clip with the same bits (Note [Canonical arithmetic] in trainer.h).
#pragma once

#include <span>

#include "core/nn/gpt_layout.h"

namespace strata {

// Sum of squares of one block's gradients laid out contiguously as its BlockSpec says: per
// tensor kernels::sum_of_squares (double), added over the tensors in order. Padding between
// tensors is not read. Runs on the calling thread's TBB arena; deterministic.
double BlockGradSumOfSquares(const BlockSpec& block, const float* block_grads);

// sqrt of the per-block sums added in block index order.
double GlobalGradNorm(std::span<const double> block_sums);

}  // namespace strata
