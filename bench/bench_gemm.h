#pragma once
#include <algorithm>

namespace strata::bench {

// GFLOP/s of an n x n x n sgemm with `threads` threads, best of `reps`: OpenBLAS's own threaded
// driver, and Strata's deterministic tiles of single-threaded OpenBLAS calls (kernels::sgemm).
struct SgemmPeak {
  double openblas_gflops = 0;
  double strata_gflops = 0;
  // The machine's sgemm peak: the faster of the two.
  double peak() const { return std::max(openblas_gflops, strata_gflops); }
};
SgemmPeak MeasureSgemmPeak(int n, int threads, int reps);

}  // namespace strata::bench
