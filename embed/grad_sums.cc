#include "embed/grad_sums.h"

#include <algorithm>

#include "core/kernels/norms.h"

namespace strata::embed {

double ChunkSumOfSquares(const float* x, uint64_t n) { return kernels::sum_of_squares(x, long(n)); }

void GradSums::zero(size_t pair) {
  const auto [first, last] = layout_->chunks_of(pair);
  std::fill(sums_.begin() + long(first), sums_.begin() + long(last), 0.0);
  fresh_[pair] = 1;
}

void GradSums::zero_all() {
  std::fill(sums_.begin(), sums_.end(), 0.0);
  std::fill(fresh_.begin(), fresh_.end(), 1);
}

}  // namespace strata::embed
