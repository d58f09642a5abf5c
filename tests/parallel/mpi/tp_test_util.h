// What the tensor-parallel tests (tp_block_test.cc, tp_head_test.cc) share: random inputs, the
// same on every rank, and the relative error of a result against the whole model's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace strata::parallel::testing_mpi {

inline std::vector<float> Random(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// ||got - want|| / ||want||.
inline double RelativeError(const float* got, const float* want, int64_t n) {
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += double(got[i] - want[i]) * (got[i] - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(err / std::max(norm, 1e-30));
}

}  // namespace strata::parallel::testing_mpi
