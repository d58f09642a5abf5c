#include "scheduler/grad_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/nn/tp_layout.h"

namespace strata {

void ChunkSumsOfSquares(const KernelTable& k, const float* x, int64_t n, double* out) {
  k.chunk_sums_of_squares(x, long(n), out);
}

double BlockGradSumOfSquares(const KernelTable& k, const BlockSpec& block,
                             const float* block_grads) {
  std::vector<double> partials((block.numel + kNormChunkFloats - 1) / kNormChunkFloats);
  ChunkSumsOfSquares(k, block_grads, block.numel, partials.data());
  return SumInChunkOrder(partials);
}

double TpBlockGradSumOfSquares(const KernelTable& k, const BlockSpec& block,
                               const float* block_grads, bool with_replicated) {
  double sum = 0.0;
  std::vector<double> partials;
  for (size_t t = 0; t < block.tensors.size(); ++t) {
    if (!with_replicated && TpReplicated(block, int(t))) continue;
    const TensorSpec& ts = block.tensors[t];
    partials.assign(size_t((ts.numel + kNormChunkFloats - 1) / kNormChunkFloats), 0.0);
    ChunkSumsOfSquares(k, block_grads + ts.offset, ts.numel, partials.data());
    sum += SumInChunkOrder(partials);
  }
  return sum;
}

double SumInChunkOrder(std::span<const double> partials) {
  double sum = 0.0;
  for (double p : partials) sum += p;
  return sum;
}

double GlobalGradNorm(std::span<const double> block_sums) {
  double total = 0.0;
  for (double s : block_sums) total += s;
  return std::sqrt(total);
}

}  // namespace strata
