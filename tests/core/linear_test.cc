#include "core/kernels/linear.h"

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

// out (N, OC) = inp (N, C) @ weight (C, OC) + bias, in double.
std::vector<double> linear_ref(const std::vector<double>& inp, const std::vector<double>& weight,
                               const std::vector<double>* bias, int N, int C, int OC) {
  std::vector<double> out(static_cast<size_t>(N) * OC);
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < OC; ++o) {
      double s = bias != nullptr ? (*bias)[o] : 0.0;
      for (int c = 0; c < C; ++c) s += inp[n * C + c] * weight[c * OC + o];
      out[n * OC + o] = s;
    }
  }
  return out;
}

TEST(LinearTest, ForwardMatchesDoubleReference) {
  const int N = 7, C = 13, OC = 5;
  auto inp = random_vector(N * C, 1), weight = random_vector(C * OC, 2),
       bias = random_vector(OC, 3);
  std::vector<float> out(N * OC, 123.0f);  // garbage: the forward overwrites
  linear_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
  auto bias_d = to_double(bias);
  expect_near_all(out, linear_ref(to_double(inp), to_double(weight), &bias_d, N, C, OC), 1e-5, 1e-6,
                  "out");
  std::vector<float> out_nb(N * OC, -7.0f);
  linear_forward(out_nb.data(), inp.data(), weight.data(), nullptr, N, C, OC);
  expect_near_all(out_nb, linear_ref(to_double(inp), to_double(weight), nullptr, N, C, OC), 1e-5,
                  1e-6, "out without bias");
}

TEST(LinearTest, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int N = 6, C = 9, OC = 4;
  auto inp = random_vector(N * C, 4), weight = random_vector(C * OC, 5),
       bias = random_vector(OC, 6);
  auto dout = random_vector(N * OC, 7);
  // Pre-filled gradients: backward must add to them.
  auto dinp0 = random_vector(N * C, 8), dweight0 = random_vector(C * OC, 9);
  auto dbias0 = random_vector(OC, 10);
  auto dinp = dinp0, dweight = dweight0, dbias = dbias0;
  linear_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(),
                  N, C, OC);

  const auto inp_d = to_double(inp), weight_d = to_double(weight), bias_d = to_double(bias);
  auto fd_inp = finite_difference(
      [&](const std::vector<double>& x) {
        return weighted_sum(linear_ref(x, weight_d, &bias_d, N, C, OC), dout);
      },
      inp_d);
  auto fd_weight = finite_difference(
      [&](const std::vector<double>& w) {
        return weighted_sum(linear_ref(inp_d, w, &bias_d, N, C, OC), dout);
      },
      weight_d);
  auto fd_bias = finite_difference(
      [&](const std::vector<double>& b) {
        return weighted_sum(linear_ref(inp_d, weight_d, &b, N, C, OC), dout);
      },
      bias_d);
  expect_near_all(increment(dinp, dinp0), fd_inp, 1e-4, 1e-5, "dinp");
  expect_near_all(increment(dweight, dweight0), fd_weight, 1e-4, 1e-5, "dweight");
  expect_near_all(increment(dbias, dbias0), fd_bias, 1e-4, 1e-5, "dbias");
}

TEST(LinearTest, BackwardSkipsNullGradients) {
  const int N = 5, C = 3, OC = 4;
  auto inp = random_vector(N * C, 11), weight = random_vector(C * OC, 12);
  auto dout = random_vector(N * OC, 13);
  std::vector<float> dweight_a(C * OC, 0.0f), dweight_b(C * OC, 0.0f), dinp(N * C, 0.0f),
      dbias(OC, 0.0f);
  linear_backward(nullptr, dweight_a.data(), nullptr, dout.data(), inp.data(), weight.data(), N, C,
                  OC);
  linear_backward(dinp.data(), dweight_b.data(), dbias.data(), dout.data(), inp.data(),
                  weight.data(), N, C, OC);
  EXPECT_EQ(dweight_a, dweight_b);
}

// GPT-2 small's c_fc shape with all 2048 rows of a B=8, T=256 batch (several GEMM tiles);
// checked at sampled rows / entries against double sums.
TEST(LinearTest, RealisticShapeMatchesDoubleReference) {
  const int N = 2048, C = 384, OC = 1536;
  auto inp = random_vector(static_cast<size_t>(N) * C, 14);
  auto weight = random_vector(static_cast<size_t>(C) * OC, 15, -0.05f, 0.05f);
  auto bias = random_vector(OC, 16);
  auto dout = random_vector(static_cast<size_t>(N) * OC, 17, -0.01f, 0.01f);
  std::vector<float> out(static_cast<size_t>(N) * OC);
  linear_forward(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
  std::vector<float> dinp(static_cast<size_t>(N) * C, 0.0f),
      dweight(static_cast<size_t>(C) * OC, 0.0f), dbias(OC, 0.0f);
  linear_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(),
                  N, C, OC);
  // Forward and dinp: every 61st row, all columns (covers every row tile).
  for (int n = 0; n < N; n += 61) {
    for (int o = 0; o < OC; ++o) {
      double s = bias[o];
      for (int c = 0; c < C; ++c) s += static_cast<double>(inp[n * C + c]) * weight[c * OC + o];
      ASSERT_NEAR(out[static_cast<size_t>(n) * OC + o], s, 1e-5 + 1e-5 * std::abs(s))
          << n << "," << o;
    }
    for (int c = 0; c < C; ++c) {
      double s = 0;
      for (int o = 0; o < OC; ++o)
        s += static_cast<double>(dout[static_cast<size_t>(n) * OC + o]) * weight[c * OC + o];
      ASSERT_NEAR(dinp[static_cast<size_t>(n) * C + c], s, 1e-6 + 1e-4 * std::abs(s))
          << n << "," << c;
    }
  }
  // dweight: every 7th column of every 5th row (a sum over all 2048 rows each).
  for (int c = 0; c < C; c += 5) {
    for (int o = 0; o < OC; o += 7) {
      double s = 0;
      for (int n = 0; n < N; ++n)
        s += static_cast<double>(inp[static_cast<size_t>(n) * C + c]) *
             dout[static_cast<size_t>(n) * OC + o];
      ASSERT_NEAR(dweight[static_cast<size_t>(c) * OC + o], s, 1e-5 + 1e-4 * std::abs(s))
          << c << "," << o;
    }
  }
  for (int o = 0; o < OC; ++o) {
    double s = 0;
    for (int n = 0; n < N; ++n) s += dout[static_cast<size_t>(n) * OC + o];
    ASSERT_NEAR(dbias[o], s, 1e-5 + 1e-4 * std::abs(s)) << o;
  }
}

}  // namespace
}  // namespace strata::kernels
