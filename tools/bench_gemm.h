#pragma once
namespace strata::tools {
// Best-of-`reps` GFLOP/s of an n x n x n OpenBLAS sgemm with `threads` threads.
double MeasureSgemmGflops(int n, int threads, int reps);
}  // namespace strata::tools
