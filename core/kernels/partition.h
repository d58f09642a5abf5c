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
#include <cstring>
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
  // Column blocks of 256; the loop over columns is innermost so that it vectorises, while each
  // column still adds its partials in chunk order.
  constexpr long kColumns = 256;
  for_each_chunk(width, kColumns, [&](long c0, long c1) {
    float sum[kColumns] = {};
    for (long k = 0; k < chunks; ++k) {
      const float* p = partials.data() + static_cast<size_t>(k) * width;
      for (long c = c0; c < c1; ++c) sum[c - c0] += p[c];
    }
    for (long c = c0; c < c1; ++c) out[c] += sum[c - c0];
  });
}

// Note [Lane reductions]
// A float sum along a row is reordered into 16 lanes (lane l adds elements l, l+16, ...), the
// lanes are combined by a fixed tree, and the elements past the last multiple of 16 are added
// last, in order. The order depends on n alone: deterministic, and vectorisable, which a plain
// float sum is not (the compiler may not reassociate it). The lanes are a GCC/Clang vector
// type rather than a float[16]: with arrays, GCC vectorised the outer loop of the layernorm
// backward instead (strided permutes, 4x slower).
// Lanes never cross a function boundary by value: GCC warns (-Wpsabi) that such a call's ABI
// depends on AVX-512, and CI builds without -march=native too.
using Lanes = float __attribute__((vector_size(64)));
constexpr int kLaneCount = 16;

inline void load_lanes(Lanes& v, const float* p) { std::memcpy(&v, p, sizeof(v)); }

// Lanes combined by a fixed tree: (0+8, 1+9, ...), then (0+4, ...), (0+2, ...), (0+1).
inline float reduce_lanes(const Lanes& v) {
  float a[kLaneCount];
  std::memcpy(a, &v, sizeof(a));
  for (int w = kLaneCount / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) a[l] += a[l + w];
  }
  return a[0];
}

// Sum of x[0..n) (Note [Lane reductions]).
inline float sum_lanes(const float* x, long n) {
  Lanes acc = {};
  long i = 0;
  for (; i + kLaneCount <= n; i += kLaneCount) {
    Lanes v;
    load_lanes(v, x + i);
    acc += v;
  }
  float s = reduce_lanes(acc);
  for (; i < n; ++i) s += x[i];
  return s;
}

// Sum of x[i] * y[i] over [0, n), same order as sum_lanes.
inline float dot_lanes(const float* x, const float* y, long n) {
  Lanes acc = {};
  long i = 0;
  for (; i + kLaneCount <= n; i += kLaneCount) {
    Lanes a, b;
    load_lanes(a, x + i);
    load_lanes(b, y + i);
    acc += a * b;
  }
  float s = reduce_lanes(acc);
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

// Maximum of x[0..n), n >= 1 (order does not matter for max, except with NaNs).
inline float max_lanes(const float* x, long n) {
  float m = x[0];
  long i = 0;
  if (n >= kLaneCount) {
    Lanes acc;
    load_lanes(acc, x);
    for (i = kLaneCount; i + kLaneCount <= n; i += kLaneCount) {
      Lanes v;
      load_lanes(v, x + i);
      acc = v > acc ? v : acc;
    }
    float a[kLaneCount];
    std::memcpy(a, &acc, sizeof(a));
    for (float f : a) m = std::max(m, f);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

}  // namespace strata::kernels::detail
