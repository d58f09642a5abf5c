#include "core/kernels/residual.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::expect_near_all;
using testing::finite_difference;
using testing::increment;
using testing::random_vector;
using testing::to_double;
using testing::weighted_sum;

std::vector<double> residual_ref(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

TEST(ResidualTest, ForwardAddsAndMayAlias) {
  const long n = 40000;  // several chunks and a ragged tail
  auto a = random_vector(n, 1), b = random_vector(n, 2);
  std::vector<float> out(n);
  residual_forward(out.data(), a.data(), b.data(), n);
  for (long i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << i;
  // In place: out aliases a.
  auto a2 = a;
  residual_forward(a2.data(), a2.data(), b.data(), n);
  EXPECT_EQ(a2, out);
}

TEST(ResidualTest, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int n = 37;
  auto a = random_vector(n, 3), b = random_vector(n, 4), dout = random_vector(n, 5);
  auto da0 = random_vector(n, 6), db0 = random_vector(n, 7);
  auto da = da0, db = db0;
  residual_backward(da.data(), db.data(), dout.data(), n);
  const auto a_d = to_double(a), b_d = to_double(b);
  auto fd_a = finite_difference(
      [&](const std::vector<double>& x) { return weighted_sum(residual_ref(x, b_d), dout); }, a_d);
  auto fd_b = finite_difference(
      [&](const std::vector<double>& x) { return weighted_sum(residual_ref(a_d, x), dout); }, b_d);
  expect_near_all(increment(da, da0), fd_a, 1e-6, 1e-6, "da");
  expect_near_all(increment(db, db0), fd_b, 1e-6, 1e-6, "db");
  for (int i = 0; i < n; ++i) EXPECT_EQ(da[i], da0[i] + dout[i]) << i;
}

}  // namespace
}  // namespace strata::kernels
