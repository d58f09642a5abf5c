// Private to core/kernels: fixed partitions for parallel loops and deterministic reductions.
//
// Note [Fixed partitions]
// Every parallel loop in the CPU kernels cuts its range into chunks whose boundaries depend
// only on the problem size and a constant chunk size, never on the number of threads, and
// gives each chunk to TBB as one task. Two consequences make the results bit-identical for any
// thread count:
// - an element always goes through the same code path (vector body or scalar tail of the
//   compiler's vectorised loop), so it is computed by the same instructions;
// - a reduction across rows sums each chunk into its own partial, then adds the partials in
//   chunk order: the order of additions is a function of the sizes alone.
// Which thread runs a chunk is up to TBB (chunks are whole tasks; idle threads steal), so a
// core that the shared machine takes away for a moment does not stall the whole loop.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace strata::kernels::detail {

// Calls body(begin, end) for each chunk [k * chunk, min(n, (k + 1) * chunk)), k = 0, 1, ...
// Chunks run concurrently; body must only write what its chunk owns.
template <typename Body>
void for_each_chunk(long n, long chunk, const Body& body) {
  if (n <= 0) return;
  const long chunks = (n + chunk - 1) / chunk;
  if (chunks == 1) {
    body(0L, n);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<long>(0, chunks, 1),
      [&](const tbb::blocked_range<long>& r) {
        for (long k = r.begin(); k < r.end(); ++k) body(k * chunk, std::min(n, (k + 1) * chunk));
      },
      tbb::simple_partitioner());
}

// out[c] += sum over rows of a per-row quantity, for c in [0, width), deterministically.
// Rows are cut into fixed chunks of `rows_per_chunk`; body(row_begin, row_end, partial) adds
// its rows' contributions into `partial` (width floats, zeroed, owned by that chunk); the
// partials are then added column by column in chunk order, and the total added to out.
template <typename Body>
void reduce_rows(float* out, int width, long rows, long rows_per_chunk, const Body& body) {
  if (rows <= 0 || width <= 0) return;
  const long chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  std::vector<float> partials(static_cast<size_t>(chunks) * width, 0.0f);
  for_each_chunk(chunks, 1, [&](long k, long) {
    body(k * rows_per_chunk, std::min(rows, (k + 1) * rows_per_chunk),
         partials.data() + static_cast<size_t>(k) * width);
  });
  // Column blocks of 256 keep the inner loop vectorised over columns.
  for_each_chunk(width, 256, [&](long c0, long c1) {
    for (long c = c0; c < c1; ++c) {
      float sum = 0.0f;
      for (long k = 0; k < chunks; ++k) sum += partials[static_cast<size_t>(k) * width + c];
      out[c] += sum;
    }
  });
}

// Sum of x[0..n) with 16 independent lanes combined in a fixed order: vectorisable (the
// compiler may not reorder a plain float sum) and deterministic.
inline float sum_lanes(const float* x, long n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  long i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += x[i];
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  }
  return acc[0];
}

// Dot product of x and y over n, same lane scheme as sum_lanes.
inline float dot_lanes(const float* x, const float* y, long n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  long i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * y[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += x[i] * y[i];
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  }
  return acc[0];
}

// Maximum of x[0..n), n >= 1.
inline float max_lanes(const float* x, long n) {
  constexpr int kLanes = 16;
  float acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = x[0];
  long i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] = std::max(acc[l], x[i + l]);
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] = std::max(acc[l], x[i]);
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) acc[l] = std::max(acc[l], acc[l + w]);
  }
  return acc[0];
}

}  // namespace strata::kernels::detail
