#include "core/kernels/fast_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace strata::kernels::detail {
namespace {

TEST(FastMathTest, ExpWithinThreeUlpOnItsRange) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.00173f) {
    const double want = std::exp(static_cast<double>(x));
    const double rel = std::abs(exp_approx(x) - want) / want;
    worst = std::max(worst, rel);
  }
  EXPECT_LT(worst, 3 * std::numeric_limits<float>::epsilon()) << "worst relative error " << worst;
  EXPECT_EQ(exp_approx(0.0f), 1.0f);
}

TEST(FastMathTest, ExpEdges) {
  EXPECT_EQ(exp_approx(-87.5f), 0.0f);
  EXPECT_EQ(exp_approx(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isfinite(exp_approx(1000.0f)));
  EXPECT_FLOAT_EQ(exp_approx(1000.0f), std::exp(88.0f));
  EXPECT_TRUE(std::isnan(exp_approx(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMathTest, SigmoidMatchesDefinition) {
  for (float z = -30.0f; z <= 30.0f; z += 0.37f) {
    const double want = 1.0 / (1.0 + std::exp(-static_cast<double>(z)));
    EXPECT_NEAR(sigmoid_approx(z), want, 4e-7 * want) << z;
  }
}

}  // namespace
}  // namespace strata::kernels::detail
