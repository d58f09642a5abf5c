#include "scheduler/grad_norm.h"

#include <cmath>

#include "core/kernels/adamw.h"

namespace strata {

double BlockGradSumOfSquares(const BlockSpec& block, const float* block_grads) {
  double sum = 0.0;
  for (const TensorSpec& t : block.tensors) {
    sum += kernels::sum_of_squares(block_grads + t.offset, t.numel);
  }
  return sum;
}

double GlobalGradNorm(std::span<const double> block_sums) {
  double total = 0.0;
  for (double s : block_sums) total += s;
  return std::sqrt(total);
}

}  // namespace strata
