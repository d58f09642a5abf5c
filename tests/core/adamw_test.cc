#include "core/kernels/adamw.h"
#include "core/kernels/adamw_math.h"
#include "core/kernels/norms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::expect_near_all;
using testing::random_vector;

// One AdamW step in double, in torch.optim.AdamW's order.
void adamw_ref(std::vector<double>& p, const std::vector<float>& grad, std::vector<double>& m,
               std::vector<double>& v, const AdamWParams& hp, double grad_scale) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(hp.beta1), hp.step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(hp.beta2), hp.step);
  for (size_t i = 0; i < p.size(); ++i) {
    const double g = grad[i] * grad_scale;
    p[i] *= 1.0 - static_cast<double>(hp.lr) * hp.weight_decay;
    m[i] = hp.beta1 * m[i] + (1.0 - hp.beta1) * g;
    v[i] = hp.beta2 * v[i] + (1.0 - hp.beta2) * g * g;
    const double denom = std::sqrt(v[i]) / std::sqrt(bc2) + hp.eps;
    p[i] -= hp.lr / bc1 * m[i] / denom;
  }
}

// Three steps of torch.optim.AdamW(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
// foreach=False) on these values, float32, torch 1.13 (the hyperparameters passed as the
// doubles nearest the float32 values, as Strata holds them).
TEST(AdamWTest, MatchesTorchAdamW) {
  std::vector<float> p = {0.5f, -1.2f, 2.0f, 0.0f, 3e-3f, -0.7f};
  std::vector<float> m(6, 0.0f), v(6, 0.0f);
  const std::vector<std::vector<float>> grads = {{0.1f, -0.2f, 0.3f, 1e-3f, -5.0f, 0.0f},
                                                 {0.05f, 0.2f, -0.3f, 2e-3f, -4.0f, 1.0f},
                                                 {-0.1f, 0.1f, 0.2f, -1e-3f, 3.0f, -2.0f}};
  AdamWParams hp;
  hp.lr = 1e-2f;
  hp.beta1 = 0.9f;
  hp.beta2 = 0.95f;
  hp.eps = 1e-8f;
  hp.weight_decay = 0.1f;
  for (size_t s = 0; s < grads.size(); ++s) {
    hp.step = static_cast<long>(s) + 1;
    adamw_update(p.data(), grads[s].data(), m.data(), v.data(), 6, hp, 1.0f);
  }
  const std::vector<double> p_torch = {0.47803032398223877,  -1.1894853115081787,
                                       1.9821805953979492,   -0.023751912638545036,
                                       0.027107620611786842, -0.70216304063797};
  const std::vector<double> m_torch = {0.0026000002399086952, 0.011800002306699753,
                                       0.01730000227689743,   0.00016100003267638385,
                                       -0.46500009298324585,  -0.11000002920627594};
  const std::vector<double> v_torch = {0.0010700002312660217, 0.004205001052469015,
                                       0.010336252860724926,  2.851250826552132e-07,
                                       2.338125467300415,     0.24750006198883057};
  expect_near_all(p, p_torch, 2e-6, 1e-8, "param");
  expect_near_all(m, m_torch, 2e-6, 1e-12, "exp_avg");
  expect_near_all(v, v_torch, 2e-6, 1e-14, "exp_avg_sq");
}

TEST(AdamWTest, ManyStepsMatchDoubleReferenceWithGradScale) {
  const long n = 50001;  // several chunks and a tail
  auto p = random_vector(n, 1), m = std::vector<float>(n, 0.0f), v = std::vector<float>(n, 0.0f);
  std::vector<double> p_ref(p.begin(), p.end()), m_ref(n, 0.0), v_ref(n, 0.0);
  AdamWParams hp;
  hp.lr = 3e-3f;
  hp.weight_decay = 0.1f;
  for (long step = 1; step <= 5; ++step) {
    hp.step = step;
    auto g = random_vector(n, 100 + step);
    adamw_update(p.data(), g.data(), m.data(), v.data(), n, hp, 0.25f);
    adamw_ref(p_ref, g, m_ref, v_ref, hp, 0.25);
  }
  expect_near_all(p, p_ref, 1e-5, 1e-6, "param");
  expect_near_all(m, m_ref, 1e-5, 1e-7, "exp_avg");
  expect_near_all(v, v_ref, 1e-5, 1e-9, "exp_avg_sq");
}

TEST(AdamWTest, FirstStepMovesEachParameterByLr) {
  // At step 1 the bias-corrected m / sqrt(v) is g / |g|: every parameter moves by lr against
  // its gradient's sign, after the decay.
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, g = {0.3f, -7.0f, 1e-3f}, m(3, 0.0f), v(3, 0.0f);
  AdamWParams hp;
  hp.lr = 0.01f;
  hp.weight_decay = 0.5f;
  adamw_update(p.data(), g.data(), m.data(), v.data(), 3, hp, 1.0f);
  EXPECT_NEAR(p[0], 1.0 * (1 - 0.005) - 0.01, 1e-6);
  EXPECT_NEAR(p[1], -2.0 * (1 - 0.005) + 0.01, 1e-6);
  EXPECT_NEAR(p[2], 0.5 * (1 - 0.005) - 0.01, 1e-5);
}

// The update runs 16 lanes at a time with AVX-512 on a CPU that has it (chosen at run time,
// whatever -march built it) and element by element elsewhere: the same bits as
// detail::AdamWElement on every element, the vector body and the tail alike.
TEST(AdamWTest, VectorAndScalarPathsGiveTheSameBits) {
  const long n = 16 * 1000 + 7;  // two partitions' worth of lanes and a tail
  auto p = random_vector(n, 3), g = random_vector(n, 4), m = random_vector(n, 5);
  auto v = random_vector(n, 6);
  for (float& x : v) x = x * x;
  AdamWParams hp;
  hp.lr = 1e-2f;
  hp.weight_decay = 0.1f;
  hp.step = 3;
  auto p2 = p, m2 = m, v2 = v;
  adamw_update(p.data(), g.data(), m.data(), v.data(), n, hp, 0.5f);
  const detail::AdamWScalars k = detail::AdamWScalarsOf(hp, 0.5f);
  for (long i = 0; i < n; ++i) detail::AdamWElement(p2[i], g[i], m2[i], v2[i], k);
  for (long i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(&p[i], &p2[i], 4), 0) << "param " << i;
    ASSERT_EQ(std::memcmp(&m[i], &m2[i], 4), 0) << "m " << i;
    ASSERT_EQ(std::memcmp(&v[i], &v2[i], 4), 0) << "v " << i;
  }
}

TEST(AdamWTest, SumOfSquaresAndClipCoefficient) {
  const long n = 300007;
  auto x = random_vector(n, 7);
  double want = 0;
  for (float f : x) want += static_cast<double>(f) * f;
  EXPECT_NEAR(sum_of_squares(x.data(), n), want, 1e-12 * want);
  EXPECT_EQ(sum_of_squares(x.data(), 0), 0.0);
  // torch.nn.utils.clip_grad_norm_ on [3, 4] with max_norm 1 scales by 1 / (5 + 1e-6).
  EXPECT_FLOAT_EQ(clip_coefficient(5.0, 1.0f), static_cast<float>(1.0 / (5.0 + 1e-6)));
  EXPECT_EQ(clip_coefficient(0.5, 1.0f), 1.0f);
  EXPECT_EQ(clip_coefficient(0.0, 1.0f), 1.0f);
}

}  // namespace
}  // namespace strata::kernels
