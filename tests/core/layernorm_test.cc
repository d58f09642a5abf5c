#include "core/kernels/layernorm.h"

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

// torch.nn.LayerNorm in double: biased variance, eps inside the square root.
std::vector<double> layernorm_ref(const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>& b, int N, int C,
                                  std::vector<double>* mean = nullptr,
                                  std::vector<double>* rstd = nullptr) {
  std::vector<double> y(x.size());
  for (int n = 0; n < N; ++n) {
    double m = 0;
    for (int c = 0; c < C; ++c) m += x[n * C + c];
    m /= C;
    double var = 0;
    for (int c = 0; c < C; ++c) var += (x[n * C + c] - m) * (x[n * C + c] - m);
    var /= C;
    const double s = 1.0 / std::sqrt(var + static_cast<double>(kLayerNormEps));
    for (int c = 0; c < C; ++c) y[n * C + c] = (x[n * C + c] - m) * s * w[c] + b[c];
    if (mean != nullptr) mean->push_back(m);
    if (rstd != nullptr) rstd->push_back(s);
  }
  return y;
}

TEST(LayerNormTest, ForwardMatchesDoubleReference) {
  // C = 37 exercises the vector lanes' tail; N = 70 spans several row chunks. The offset of 3
  // checks that the variance does not cancel when the mean dominates.
  const int N = 70, C = 37;
  auto x = random_vector(N * C, 1, 2.0f, 4.0f);
  auto w = random_vector(C, 2), b = random_vector(C, 3);
  std::vector<float> y(N * C), mean(N), rstd(N);
  layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  std::vector<double> mean_ref, rstd_ref;
  auto y_ref = layernorm_ref(to_double(x), to_double(w), to_double(b), N, C, &mean_ref, &rstd_ref);
  expect_near_all(y, y_ref, 1e-5, 1e-5, "out");
  expect_near_all(mean, mean_ref, 1e-6, 1e-6, "mean");
  expect_near_all(rstd, rstd_ref, 1e-5, 0, "rstd");
}

TEST(LayerNormTest, ConstantRowUsesEps) {
  const int C = 8;
  std::vector<float> x(C, 5.0f), w(C, 1.0f), b(C, 0.25f), y(C), mean(1), rstd(1);
  layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), 1, C);
  EXPECT_FLOAT_EQ(mean[0], 5.0f);
  EXPECT_NEAR(rstd[0], 1.0 / std::sqrt(1e-5), 1e-2);
  for (float v : y) EXPECT_FLOAT_EQ(v, 0.25f);
}

TEST(LayerNormTest, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int N = 5, C = 19;
  auto x = random_vector(N * C, 4), w = random_vector(C, 5), b = random_vector(C, 6);
  auto dout = random_vector(N * C, 7);
  std::vector<float> y(N * C), mean(N), rstd(N);
  layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  auto dx0 = random_vector(N * C, 8), dw0 = random_vector(C, 9), db0 = random_vector(C, 10);
  auto dx = dx0, dw = dw0, db = db0;
  layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                     rstd.data(), N, C);
  const auto x_d = to_double(x), w_d = to_double(w), b_d = to_double(b);
  auto fd_x = finite_difference(
      [&](const std::vector<double>& v) {
        return weighted_sum(layernorm_ref(v, w_d, b_d, N, C), dout);
      },
      x_d);
  auto fd_w = finite_difference(
      [&](const std::vector<double>& v) {
        return weighted_sum(layernorm_ref(x_d, v, b_d, N, C), dout);
      },
      w_d);
  auto fd_b = finite_difference(
      [&](const std::vector<double>& v) {
        return weighted_sum(layernorm_ref(x_d, w_d, v, N, C), dout);
      },
      b_d);
  expect_near_all(increment(dx, dx0), fd_x, 1e-3, 1e-5, "dinp");
  expect_near_all(increment(dw, dw0), fd_w, 1e-4, 1e-5, "dweight");
  expect_near_all(increment(db, db0), fd_b, 1e-4, 1e-5, "dbias");
}

// Many rows: the parameter gradients go through chunked partial sums.
TEST(LayerNormTest, ParameterGradientsOverManyRows) {
  const int N = 1000, C = 24;
  auto x = random_vector(N * C, 11), w = random_vector(C, 12), b = random_vector(C, 13);
  auto dout = random_vector(N * C, 14);
  std::vector<float> y(N * C), mean(N), rstd(N), dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                     rstd.data(), N, C);
  std::vector<double> mean_ref, rstd_ref;
  layernorm_ref(to_double(x), to_double(w), to_double(b), N, C, &mean_ref, &rstd_ref);
  std::vector<double> dw_ref(C, 0.0), db_ref(C, 0.0);
  for (int n = 0; n < N; ++n) {
    for (int c = 0; c < C; ++c) {
      dw_ref[c] += dout[n * C + c] * (x[n * C + c] - mean_ref[n]) * rstd_ref[n];
      db_ref[c] += dout[n * C + c];
    }
  }
  expect_near_all(dw, dw_ref, 1e-4, 1e-4, "dweight");
  expect_near_all(db, db_ref, 1e-4, 1e-4, "dbias");
}

}  // namespace
}  // namespace strata::kernels
