#include "core/kernels/attention.h"

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

struct Dims {
  int B, T, C, NH;
  size_t qkv() const { return static_cast<size_t>(B) * T * 3 * C; }
  size_t out() const { return static_cast<size_t>(B) * T * C; }
  size_t att() const { return static_cast<size_t>(B) * NH * T * T; }
};

// Causal attention in double (nanoGPT's: softmax(q k^T / sqrt(hs), causal) v per head).
std::vector<double> attention_ref(const std::vector<double>& qkv, const Dims& d,
                                  std::vector<double>* att = nullptr) {
  const int hs = d.C / d.NH, ld = 3 * d.C;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> out(d.out(), 0.0);
  if (att != nullptr) att->assign(d.att(), 0.0);
  std::vector<double> p(d.T);
  for (int b = 0; b < d.B; ++b) {
    for (int h = 0; h < d.NH; ++h) {
      const double* base = qkv.data() + static_cast<size_t>(b) * d.T * ld + h * hs;
      for (int i = 0; i < d.T; ++i) {
        double max = -1e300;
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int c = 0; c < hs; ++c) s += base[i * ld + c] * base[j * ld + d.C + c];
          p[j] = s * scale;
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - max));
        for (int j = 0; j <= i; ++j) {
          p[j] /= sum;
          if (att != nullptr)
            (*att)[((static_cast<size_t>(b) * d.NH + h) * d.T + i) * d.T + j] = p[j];
          for (int c = 0; c < hs; ++c) {
            out[(static_cast<size_t>(b) * d.T + i) * d.C + h * hs + c] +=
                p[j] * base[j * ld + 2 * d.C + c];
          }
        }
      }
    }
  }
  return out;
}

// The analytic gradient of sum(out * dout) with respect to qkv, in double.
std::vector<double> attention_backward_ref(const std::vector<double>& qkv,
                                           const std::vector<float>& dout, const Dims& d) {
  const int hs = d.C / d.NH, ld = 3 * d.C;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> att;
  attention_ref(qkv, d, &att);
  std::vector<double> dqkv(d.qkv(), 0.0), datt(d.T);
  for (int b = 0; b < d.B; ++b) {
    for (int h = 0; h < d.NH; ++h) {
      const size_t off = static_cast<size_t>(b) * d.T * ld + h * hs;
      const double* q = qkv.data() + off;
      double* dq = dqkv.data() + off;
      const float* dy = dout.data() + static_cast<size_t>(b) * d.T * d.C + h * hs;
      for (int i = 0; i < d.T; ++i) {
        const double* p = att.data() + ((static_cast<size_t>(b) * d.NH + h) * d.T + i) * d.T;
        double dot = 0;
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int c = 0; c < hs; ++c) s += dy[i * d.C + c] * q[j * ld + 2 * d.C + c];
          datt[j] = s;
          dot += p[j] * s;
          for (int c = 0; c < hs; ++c) dq[j * ld + 2 * d.C + c] += p[j] * dy[i * d.C + c];
        }
        for (int j = 0; j <= i; ++j) {
          const double dpre = p[j] * (datt[j] - dot) * scale;
          for (int c = 0; c < hs; ++c) {
            dq[i * ld + c] += dpre * q[j * ld + d.C + c];
            dq[j * ld + d.C + c] += dpre * q[i * ld + c];
          }
        }
      }
    }
  }
  return dqkv;
}

void run_forward_check(const Dims& d, uint64_t seed, double rtol) {
  auto qkv = random_vector(d.qkv(), seed, -2.0f, 2.0f);
  std::vector<float> out(d.out(), 9.0f), att(d.att(), 9.0f);  // garbage: fully overwritten
  attention_forward(out.data(), att.data(), qkv.data(), d.B, d.T, d.C, d.NH);
  std::vector<double> att_ref;
  auto out_ref = attention_ref(to_double(qkv), d, &att_ref);
  expect_near_all(out, out_ref, rtol, 1e-6, "out");
  expect_near_all(att, att_ref, rtol, 1e-7, "att");
  // Above the diagonal the saved probabilities are exactly 0.
  for (size_t bh = 0; bh < static_cast<size_t>(d.B) * d.NH; ++bh) {
    for (int i = 0; i < d.T; ++i) {
      for (int j = i + 1; j < d.T; ++j) ASSERT_EQ(att[(bh * d.T + i) * d.T + j], 0.0f);
    }
  }
}

void run_backward_check(const Dims& d, uint64_t seed, double rtol, double atol) {
  auto qkv = random_vector(d.qkv(), seed, -2.0f, 2.0f);
  auto dout = random_vector(d.out(), seed + 1);
  std::vector<float> out(d.out()), att(d.att()), datt(d.att(), 1e30f);  // scratch: ignored
  attention_forward(out.data(), att.data(), qkv.data(), d.B, d.T, d.C, d.NH);
  auto dqkv0 = random_vector(d.qkv(), seed + 2);
  auto dqkv = dqkv0;
  attention_backward(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), d.B, d.T, d.C,
                     d.NH);
  expect_near_all(increment(dqkv, dqkv0), attention_backward_ref(to_double(qkv), dout, d), rtol,
                  atol, "dqkv");
}

TEST(AttentionTest, ForwardMatchesDoubleReference) { run_forward_check({2, 5, 8, 2}, 1, 1e-5); }

// 150 positions: several causal row blocks, the last one ragged.
TEST(AttentionTest, ForwardAcrossRowBlocks) { run_forward_check({1, 150, 16, 2}, 2, 1e-5); }

TEST(AttentionTest, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const Dims d{2, 4, 6, 2};
  auto qkv = random_vector(d.qkv(), 3, -2.0f, 2.0f);
  auto dout = random_vector(d.out(), 4);
  std::vector<float> out(d.out()), att(d.att()), datt(d.att());
  attention_forward(out.data(), att.data(), qkv.data(), d.B, d.T, d.C, d.NH);
  auto dqkv0 = random_vector(d.qkv(), 5);
  auto dqkv = dqkv0;
  attention_backward(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), d.B, d.T, d.C,
                     d.NH);
  auto fd = finite_difference(
      [&](const std::vector<double>& x) { return weighted_sum(attention_ref(x, d), dout); },
      to_double(qkv));
  expect_near_all(increment(dqkv, dqkv0), fd, 1e-4, 1e-5, "dqkv");
  // The analytic double reference used for the larger cases agrees with the differences too.
  expect_near_all(attention_backward_ref(to_double(qkv), dout, d).data(), fd.data(), fd.size(),
                  1e-6, 1e-8, "reference dqkv");
}

TEST(AttentionTest, BackwardAcrossRowBlocks) { run_backward_check({1, 150, 16, 2}, 6, 1e-4, 1e-5); }

// GPT-2 small's head layout (C = 384, 6 heads of 64) at T = 256, two sequences.
TEST(AttentionTest, RealisticShapeMatchesDoubleReference) {
  const Dims d{2, 256, 384, 6};
  run_forward_check(d, 7, 1e-4);
  run_backward_check(d, 8, 1e-3, 1e-5);
}

}  // namespace
}  // namespace strata::kernels
