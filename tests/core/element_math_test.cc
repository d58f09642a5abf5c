// The STRATA_HD element functions (core/kernels/*_math.h) on their own: the arithmetic that the
// CPU kernels and the CUDA kernels both call, against double-precision definitions. (The kernel
// tests cover them again inside the CPU kernels; these pin down each function's own contract.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/kernels/adamw_math.h"
#include "core/kernels/bf16_math.h"
#include "core/kernels/gelu_math.h"
#include "core/kernels/hd.h"
#include "core/kernels/layernorm_math.h"
#include "core/kernels/softmax_math.h"

namespace strata::kernels::detail {
namespace {

// gelu(x) = 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): the second form keeps its precision in the
// negative tail, where 1 + tanh(u) cancels even in double (Note [GELU through the sigmoid]).
double GeluRef(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

TEST(ElementMath, BitsRoundTripAndSqrtIsCorrectlyRounded) {
  for (float x : {0.0f, -0.0f, 1.5f, -3.25e-20f, 6.1e30f, INFINITY}) {
    const float back = BitsToFloat(FloatBits(x));
    EXPECT_EQ(std::memcmp(&back, &x, 4), 0) << x;
  }
  for (float x = 1e-6f; x < 1e6f; x *= 1.37f) {
    EXPECT_EQ(SqrtRn(x), static_cast<float>(std::sqrt(double(x)))) << x;  // exact in double
  }
}

TEST(ElementMath, GeluAndItsGradientMatchTheDefinition) {
  for (double x = -10.0; x <= 10.0; x += 0.0137) {
    const float xf = static_cast<float>(x);
    // Float rounding of u is amplified by |2u| in exp(-2u) (about 60 at x = -8): the bound
    // scales with it.
    const double u = std::abs(std::sqrt(2.0 / M_PI) * (xf + 0.044715 * xf * xf * xf));
    EXPECT_NEAR(GeluForward(xf), GeluRef(xf), 2e-7 * (1 + 2 * u) * std::abs(GeluRef(xf))) << x;
    const double h = 1e-5, fd = (GeluRef(xf + h) - GeluRef(xf - h)) / (2 * h);
    EXPECT_NEAR(GeluGrad(xf), fd, 2e-6 * (1 + std::abs(fd))) << x;
  }
}

TEST(ElementMath, LayerNormPiecesMatchTheDefinition) {
  const float sum_sq_dev = 12.5f;
  const int C = 10;
  const double rstd = 1.0 / std::sqrt(sum_sq_dev / double(C) + 1e-5);
  EXPECT_NEAR(LayerNormRstd(sum_sq_dev, C), rstd, 1e-7 * rstd);
  const float m = 0.25f, s = 2.0f;
  EXPECT_EQ(LayerNormNorm(1.25f, m, s), 2.0f);
  EXPECT_EQ(LayerNormOut(1.25f, m, s, 3.0f, -1.0f), 5.0f);  // 2 * 3 - 1
  // (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd
  EXPECT_EQ(LayerNormDinp(1.0f, 0.5f, 2.0f, 0.125f, 4.0f), (1.0f - 0.5f - 2.0f * 0.125f) * 4.0f);
}

TEST(ElementMath, SoftmaxAndCrossEntropyPieces) {
  EXPECT_EQ(SoftmaxExp(3.0f, 3.0f), 1.0f);
  EXPECT_NEAR(SoftmaxExp(1.0f, 3.0f), std::exp(-2.0), 3e-7 * std::exp(-2.0));
  EXPECT_EQ(SoftmaxBackward(0.5f, 2.0f, 0.5f), 0.75f);
  // -log softmax: max + log(sum) - x[target].
  EXPECT_DOUBLE_EQ(CrossEntropyRowLoss(2.0f, 4.0f, 1.0f), 2.0 + std::log(4.0) - 1.0);
  EXPECT_EQ(CrossEntropyDlogit(1.0f, 0.25f, false, 0.5f), 1.125f);
  EXPECT_EQ(CrossEntropyDlogit(1.0f, 0.25f, true, 0.5f), 0.625f);  // (p - 1) * dloss
}

TEST(ElementMath, AdamWElementIsTorchsOrderOfOperations) {
  AdamWParams hp;
  hp.lr = 1e-2f;
  hp.weight_decay = 0.1f;
  hp.step = 3;
  const AdamWScalars k = AdamWScalarsOf(hp, 0.5f);
  float p = 1.0f, m = 0.1f, v = 0.01f;
  AdamWElement(p, 0.4f, m, v, k);
  // The same update in double, step by step (torch.optim.AdamW with a 0.5 clip coefficient).
  const double g = 0.2, bc1 = 1 - std::pow(0.9, 3), bc2 = 1 - std::pow(0.95, 3);
  const double m_ref = 0.9 * 0.1 + 0.1 * g, v_ref = 0.95 * 0.01 + 0.05 * g * g;
  const double p_ref = 1.0 * (1 - 1e-2 * 0.1) - (1e-2 / bc1) * m_ref /
                                                    (std::sqrt(v_ref) / std::sqrt(bc2) + 1e-8);
  EXPECT_NEAR(m, m_ref, 1e-7);
  EXPECT_NEAR(v, v_ref, 1e-8);
  EXPECT_NEAR(p, p_ref, 1e-6);
}

// Round to nearest even on the 16 bits bf16 keeps, as torch's float -> bfloat16 conversion.
TEST(ElementMath, RoundToBf16IsNearestEven) {
  EXPECT_EQ(RoundToBf16(1.0f), 1.0f);
  // 1 + 2^-8 is half way between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one, 1.
  EXPECT_EQ(RoundToBf16(1.0f + 0x1p-8f), 1.0f);
  // 1 + 3 * 2^-8 is half way between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up.
  EXPECT_EQ(RoundToBf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(RoundToBf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // just above half: up
  EXPECT_EQ(RoundToBf16(-2.5f), -2.5f);                                // exact values stay
  // The largest bf16 is (2 - 2^-7) * 2^127, about 3.39e38: FLT_MAX lies past its midpoint with
  // infinity, so it becomes infinity; 3e38 stays finite.
  EXPECT_EQ(RoundToBf16(3.4028235e38f), INFINITY);
  EXPECT_TRUE(std::isfinite(RoundToBf16(3.0e38f)));
  EXPECT_TRUE(std::isinf(RoundToBf16(INFINITY)) && RoundToBf16(-INFINITY) < 0);
  const float nan = RoundToBf16(std::nanf(""));
  EXPECT_TRUE(std::isnan(nan));
  // Every result has its low 16 bits zero, and is within half a bf16 ulp (2^-8 relative).
  for (float x = 1e-30f; x < 1e30f; x *= 1.0173f) {
    const float r = RoundToBf16(x);
    EXPECT_EQ(FloatBits(r) & 0xffff, 0) << x;
    EXPECT_LE(std::abs(double(r) - x), std::abs(double(x)) * 0x1p-8) << x;
  }
}

}  // namespace
}  // namespace strata::kernels::detail
