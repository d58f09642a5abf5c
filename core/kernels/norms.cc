#include "core/kernels/norms.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {

// Floats per task of zero (Note [Fixed partitions]).
constexpr long kZeroChunk = 1 << 16;
// Norm chunks per task: enough work to be worth a task, the same sums whatever runs.
constexpr long kChunksPerTask = 64;
// Elements per partial sum of sum_of_squares.
constexpr long kSquaresChunk = 65536;

// One chunk in the lane order of chunk_sums_of_squares (vectorisable, deterministic). The CUDA
// kernel (core/kernels/cuda/norms.cu) follows the same order.
double ChunkSumOfSquares(const float* x, long n) {
  double lanes[8] = {};
  long i = 0;
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

void zero(float* x, long n) {
  detail::for_each_chunk(n, kZeroChunk, [&](long i0, long i1) {
    std::memset(x + i0, 0, sizeof(float) * size_t(i1 - i0));
  });
}

void chunk_sums_of_squares(const float* x, long n, double* out) {
  const long chunks = (n + kNormChunkFloats - 1) / kNormChunkFloats;
  detail::for_each_chunk(chunks, kChunksPerTask, [&](long c0, long c1) {
    for (long c = c0; c < c1; ++c) {
      const long begin = c * kNormChunkFloats;
      out[c] = ChunkSumOfSquares(x + begin, std::min(kNormChunkFloats, n - begin));
    }
  });
}

double sum_of_squares(const float* x, long n) {
  if (n <= 0) return 0.0;
  const long chunks = (n + kSquaresChunk - 1) / kSquaresChunk;
  std::vector<double> partials(static_cast<size_t>(chunks), 0.0);
  detail::for_each_chunk(chunks, 1, [&](long k, long) {
    const long i0 = k * kSquaresChunk;
    partials[k] = ChunkSumOfSquares(x + i0, std::min(kSquaresChunk, n - i0));
  });
  double total = 0.0;
  for (double p : partials) total += p;
  return total;
}

}  // namespace strata::kernels
