// Shared helpers for the CPU kernel tests: deterministic random data, tolerant comparisons,
// central finite differences in double, and running a computation on 1 or 2 threads.
#pragma once

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/kernels/matmul.h"

namespace strata::kernels::testing {

// splitmix64: the same numbers on every standard library.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) / static_cast<float>(1 << 24);
  }

 private:
  uint64_t state_;
};

inline std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  TestRng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = rng.uniform(lo, hi);
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// |got - want| <= atol + rtol * |want| for every element; reports the first few failures.
template <typename T>
void expect_near_all(const T* got, const double* want, size_t n, double rtol, double atol,
                     const std::string& what) {
  int failures = 0;
  for (size_t i = 0; i < n; ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= atol + rtol * std::abs(want[i]))) {
      if (++failures <= 5) {
        ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i]
                      << " (error " << err << ")";
      }
    }
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << n << " elements out of tolerance";
}

template <typename T>
void expect_near_all(const std::vector<T>& got, const std::vector<double>& want, double rtol,
                     double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  expect_near_all(got.data(), want.data(), got.size(), rtol, atol, what);
}

// Central finite differences of a scalar function of x (double), at every index of x:
// (f(x + h e_i) - f(x - h e_i)) / 2h. f is the double reference, so truncation error ~h^2
// and rounding error ~1e-16 / h are both far below the float kernels' errors.
inline std::vector<double> finite_difference(
    const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
    double h = 1e-5) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    grad[i] = (fp - fm) / (2 * h);
  }
  return grad;
}

// sum_i a[i] * w[i]: turns a vector output into the scalar "loss" whose gradient with respect
// to the output is w (the dout handed to the float backward).
inline double weighted_sum(const std::vector<double>& a, const std::vector<float>& w) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * w[i];
  return s;
}

// a[i] - b[i] in double: the increment a backward added to a pre-filled gradient.
inline std::vector<double> increment(const std::vector<float>& after,
                                     const std::vector<float>& before) {
  std::vector<double> d(after.size());
  for (size_t i = 0; i < after.size(); ++i) d[i] = static_cast<double>(after[i]) - before[i];
  return d;
}

// Runs fn inside a TBB arena of `threads` threads (which also bounds the GEMM tiles).
inline void run_with_threads(int threads, const std::function<void()>& fn) {
  tbb::task_arena arena(threads);
  arena.execute(fn);
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Byte comparison that says how many elements differ.
inline void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want,
                           const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) ++differ;
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size() << " elements differ";
}

}  // namespace strata::kernels::testing
