#include "scheduler/grad_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/partition.h"
#include "core/nn/tp_layout.h"

namespace strata {

namespace {

// One chunk: eight double lanes, combined in a fixed order (vectorisable, deterministic).
double ChunkSumOfSquares(const float* x, int64_t n) {
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) {
      const double d = x[i + l];
      lanes[l] += d * d;
    }
  }
  for (int l = 0; i < n; ++i, ++l) {
    const double d = x[i];
    lanes[l] += d * d;
  }
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

}  // namespace

void ChunkSumsOfSquares(const float* x, int64_t n, double* out) {
  const int64_t chunks = (n + kNormChunkFloats - 1) / kNormChunkFloats;
  // Groups of 64 chunks per task: enough work to be worth a task, the same sums whatever runs.
  constexpr long kChunksPerTask = 64;
  kernels::detail::for_each_chunk(long(chunks), kChunksPerTask, [&](long c0, long c1) {
    for (long c = c0; c < c1; ++c) {
      const int64_t begin = c * kNormChunkFloats;
      out[c] = ChunkSumOfSquares(x + begin, std::min(kNormChunkFloats, n - begin));
    }
  });
}

double BlockGradSumOfSquares(const BlockSpec& block, const float* block_grads) {
  std::vector<double> partials((block.numel + kNormChunkFloats - 1) / kNormChunkFloats);
  ChunkSumsOfSquares(block_grads, block.numel, partials.data());
  return SumInChunkOrder(partials);
}

double TpBlockGradSumOfSquares(const BlockSpec& block, const float* block_grads,
                               bool with_replicated) {
  double sum = 0.0;
  std::vector<double> partials;
  for (size_t t = 0; t < block.tensors.size(); ++t) {
    if (!with_replicated && TpReplicated(block, int(t))) continue;
    const TensorSpec& ts = block.tensors[t];
    partials.assign(size_t((ts.numel + kNormChunkFloats - 1) / kNormChunkFloats), 0.0);
    ChunkSumsOfSquares(block_grads + ts.offset, ts.numel, partials.data());
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
