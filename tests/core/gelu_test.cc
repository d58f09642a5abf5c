#include "core/kernels/gelu.h"

#include <gtest/gtest.h>

#include <cmath>
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

// torch's gelu(approximate="tanh"), in double.
double gelu_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

std::vector<double> gelu_ref(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = gelu_ref(x[i]);
  return y;
}

TEST(GeluTest, ForwardMatchesDoubleReference) {
  // A dense sweep of [-12, 12] (both tails) plus random values, in several chunks.
  std::vector<float> x;
  for (int i = -12000; i <= 12000; ++i) x.push_back(i * 1e-3f);
  auto r = random_vector(20000, 1, -4.0f, 4.0f);
  x.insert(x.end(), r.begin(), r.end());
  std::vector<float> y(x.size());
  gelu_forward(y.data(), x.data(), static_cast<long>(x.size()));
  // Relative to the value, with an absolute floor far below a float ulp of x.
  expect_near_all(y, gelu_ref(to_double(x)), 3e-6, 1e-12, "gelu");
}

TEST(GeluTest, KnownValues) {
  // torch.nn.functional.gelu(torch.tensor([...], dtype=torch.float64), approximate="tanh")
  const float x[] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f};
  const double want[] = {-0.0036373920817729943, -0.15880800939172324, 0.0, 0.34571400982514394,
                         1.954597694087775};
  float y[5];
  gelu_forward(y, x, 5);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(y[i], want[i], 2e-7 + 1e-6 * std::abs(want[i])) << x[i];
}

TEST(GeluTest, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int n = 301;
  auto x = random_vector(n, 2, -6.0f, 6.0f);
  auto dout = random_vector(n, 3);
  auto dinp0 = random_vector(n, 4);
  auto dinp = dinp0;
  gelu_backward(dinp.data(), x.data(), dout.data(), n);
  auto fd = finite_difference(
      [&](const std::vector<double>& v) { return weighted_sum(gelu_ref(v), dout); }, to_double(x));
  expect_near_all(increment(dinp, dinp0), fd, 1e-4, 1e-6, "dinp");
}

}  // namespace
}  // namespace strata::kernels
