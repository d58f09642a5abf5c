// The LLaMA family's kernels (issue 33): RMSNorm, RoPE, SwiGLU and grouped-query attention, each
// against a double-precision reference of Hugging Face's definition, torch's own values, finite
// differences for the backward, and the same bits for any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/attention.h"
#include "core/kernels/rmsnorm.h"
#include "core/kernels/rope.h"
#include "core/kernels/swiglu.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::bitwise_equal;
using testing::expect_near_all;
using testing::finite_difference;
using testing::increment;
using testing::random_vector;
using testing::run_with_threads;
using testing::to_double;
using testing::weighted_sum;

// ---- RMSNorm ---------------------------------------------------------------------------------

// LlamaRMSNorm in double: w * (x / sqrt(mean(x^2) + eps)).
std::vector<double> rmsnorm_ref(const std::vector<double>& x, const std::vector<double>& w, int N,
                                int C, double eps) {
  std::vector<double> y(x.size());
  for (int n = 0; n < N; ++n) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[n * C + c] * x[n * C + c];
    const double s = 1.0 / std::sqrt(ss / C + eps);
    for (int c = 0; c < C; ++c) y[n * C + c] = w[c] * (x[n * C + c] * s);
  }
  return y;
}

TEST(RmsNorm, ForwardMatchesTorchAndTheDoubleReference) {
  // torch: w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).
  const float h[] = {1.0f, -2.0f, 3.0f, 0.5f}, w[] = {0.5f, 1.0f, -1.0f, 2.0f};
  const double want[] = {0.2649064362049103, -1.0596257448196411, -1.5894386768341064,
                         0.5298128724098206};
  float y[4], rstd;
  rmsnorm_forward(y, &rstd, h, w, 1, 4, 1e-6f);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i], 1e-6 * std::abs(want[i])) << i;

  const int N = 37, C = 83;  // a lane tail and several row chunks
  auto x = random_vector(size_t(N) * C, 1, -3.0f, 3.0f);
  auto wt = random_vector(C, 2);
  std::vector<float> out(x.size()), r(N);
  rmsnorm_forward(out.data(), r.data(), x.data(), wt.data(), N, C, 1e-5f);
  expect_near_all(out, rmsnorm_ref(to_double(x), to_double(wt), N, C, 1e-5), 2e-6, 1e-7, "y");
}

TEST(RmsNorm, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int N = 5, C = 19;
  const double eps = 1e-5;
  auto x = random_vector(size_t(N) * C, 3, -2.0f, 2.0f);
  auto w = random_vector(C, 4);
  auto dy = random_vector(x.size(), 5);
  std::vector<float> y(x.size()), rstd(N);
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, float(eps));
  auto dx0 = random_vector(x.size(), 6), dw0 = random_vector(C, 7);
  auto dx = dx0, dw = dw0;
  rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
  const auto xd = to_double(x), wd = to_double(w);
  expect_near_all(increment(dx, dx0),
                  finite_difference([&](const std::vector<double>& v) {
                    return weighted_sum(rmsnorm_ref(v, wd, N, C, eps), dy);
                  }, xd),
                  1e-4, 1e-6, "dx");
  expect_near_all(increment(dw, dw0),
                  finite_difference([&](const std::vector<double>& v) {
                    return weighted_sum(rmsnorm_ref(xd, v, N, C, eps), dy);
                  }, wd),
                  1e-4, 1e-6, "dw");
}

// ---- RoPE ------------------------------------------------------------------------------------

TEST(Rope, TableIsHuggingFacesInFp32) {
  // LlamaRotaryEmbedding(dim 8, base 10000) at position 100, from torch.
  const int T = 101, hs = 8;
  std::vector<float> cos(size_t(T) * hs / 2), sin(cos.size());
  rope_table(cos.data(), sin.data(), T, hs, 10000.0);
  const float want_cos[] = {0.8623188734054565f, -0.83907151222229f, 0.5403023362159729f,
                            0.9950041770935059f};
  const float want_sin[] = {-0.5063656568527222f, -0.5440211296081543f, 0.8414709568023682f,
                            0.0998334214091301f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(cos[100 * 4 + i], want_cos[i], 1e-7) << i;
    EXPECT_NEAR(sin[100 * 4 + i], want_sin[i], 1e-7) << i;
  }
  EXPECT_EQ(cos[0], 1.0f);
  EXPECT_EQ(sin[0], 0.0f);
}

// q * cos + rotate_half(q) * sin in double over a packed (B, T, ld) buffer's first `heads` heads.
std::vector<double> rope_ref(const std::vector<double>& x, int B, int T, int ld, int heads, int hs,
                             double theta) {
  std::vector<double> y = x;
  const int half = hs / 2;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i) {
          const double a = t / std::pow(theta, 2.0 * i / hs);
          const size_t at = (size_t(b) * T + t) * ld + size_t(h) * hs + i;
          y[at] = x[at] * std::cos(a) - x[at + half] * std::sin(a);
          y[at + half] = x[at + half] * std::cos(a) + x[at] * std::sin(a);
        }
  return y;
}

TEST(Rope, ForwardRotatesTheQueryAndKeyHeadsOnlyAndBackwardIsItsTranspose) {
  const int B = 2, T = 9, hs = 6, heads = 3, ld = 5 * hs;  // 3 rotated heads, 2 left alone
  const double theta = 500000.0;
  std::vector<float> cos(size_t(T) * hs / 2), sin(cos.size());
  rope_table(cos.data(), sin.data(), T, hs, theta);
  auto x = random_vector(size_t(B) * T * ld, 8);
  auto y = x;
  rope_forward(y.data(), cos.data(), sin.data(), B, T, ld, heads, hs);
  expect_near_all(y, rope_ref(to_double(x), B, T, ld, heads, hs, theta), 1e-6, 1e-6, "y");
  // The gradient of sum(dy * rope(x)) by x.
  auto dy = random_vector(x.size(), 9);
  auto dx = dy;
  rope_backward(dx.data(), cos.data(), sin.data(), B, T, ld, heads, hs);
  const auto fd = finite_difference([&](const std::vector<double>& v) {
    return weighted_sum(rope_ref(v, B, T, ld, heads, hs, theta), dy);
  }, to_double(x));
  expect_near_all(dx, fd, 1e-4, 1e-6, "dx");
}

// ---- SwiGLU ----------------------------------------------------------------------------------

std::vector<double> swiglu_ref(const std::vector<double>& gu, long N, int F) {
  std::vector<double> y(size_t(N) * F);
  for (long n = 0; n < N; ++n)
    for (int i = 0; i < F; ++i) {
      const double g = gu[n * 2 * F + i], u = gu[n * 2 * F + F + i];
      y[n * F + i] = g / (1.0 + std::exp(-g)) * u;
    }
  return y;
}

TEST(Swiglu, ForwardMatchesTorchsSiluAndBackwardFiniteDifferences) {
  // torch.nn.functional.silu([-3, -0.5, 0, 1.5, 4]) times an up of ones.
  const float g[] = {-3.0f, -0.5f, 0.0f, 1.5f, 4.0f};
  const double want[] = {-0.14227761328220367, -0.1887703388929367, 0.0, 1.226361632347107,
                         3.9280550479888916};
  for (int i = 0; i < 5; ++i) {
    const float gu[2] = {g[i], 1.0f};
    float y;
    swiglu_forward(&y, gu, 1, 1);
    EXPECT_NEAR(y, want[i], 2e-7 + 1e-6 * std::abs(want[i])) << g[i];
  }
  const long N = 21;
  const int F = 13;
  auto gu = random_vector(size_t(N) * 2 * F, 10, -6.0f, 6.0f);
  std::vector<float> y(size_t(N) * F);
  swiglu_forward(y.data(), gu.data(), N, F);
  expect_near_all(y, swiglu_ref(to_double(gu), N, F), 3e-6, 1e-7, "y");
  auto dy = random_vector(y.size(), 11);
  auto d0 = random_vector(gu.size(), 12);
  auto d = d0;
  swiglu_backward(d.data(), dy.data(), gu.data(), N, F);
  expect_near_all(increment(d, d0),
                  finite_difference([&](const std::vector<double>& v) {
                    return weighted_sum(swiglu_ref(v, N, F), dy);
                  }, to_double(gu)),
                  1e-4, 1e-6, "dgate_up");
}

// ---- Grouped-query attention -----------------------------------------------------------------

struct Gqa {
  int B, T, C, NH, NKV;
  int hs() const { return C / NH; }
  int ld() const { return C + 2 * NKV * hs(); }
  size_t qkv() const { return size_t(B) * T * ld(); }
  size_t out() const { return size_t(B) * T * C; }
  size_t att() const { return size_t(B) * NH * T * T; }
};

// softmax(q k^T / sqrt(hs), causal) v with query head h on key/value head h / (NH / NKV), as
// Hugging Face's repeat_kv does it, in double.
std::vector<double> gqa_ref(const std::vector<double>& qkv, const Gqa& d) {
  const int hs = d.hs(), ld = d.ld(), group = d.NH / d.NKV;
  std::vector<double> out(d.out(), 0.0), p(d.T);
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const double* row = qkv.data() + size_t(b) * d.T * ld;
      const int kq = h * hs, kk = d.C + (h / group) * hs, kv = d.C + d.NKV * hs + (h / group) * hs;
      for (int i = 0; i < d.T; ++i) {
        double max = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int c = 0; c < hs; ++c) s += row[i * ld + kq + c] * row[j * ld + kk + c];
          max = std::max(max, p[j] = s / std::sqrt(double(hs)));
        }
        for (int j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - max));
        for (int j = 0; j <= i; ++j)
          for (int c = 0; c < hs; ++c)
            out[(size_t(b) * d.T + i) * d.C + kq + c] += p[j] / sum * row[j * ld + kv + c];
      }
    }
  return out;
}

TEST(GqaAttention, ForwardAndBackwardMatchTheReference) {
  const Gqa d{2, 7, 24, 6, 2, };  // 3 query heads per key/value head
  auto qkv = random_vector(d.qkv(), 13);
  std::vector<float> out(d.out()), att(d.att()), datt(d.att());
  gqa_attention_forward(out.data(), att.data(), qkv.data(), d.B, d.T, d.C, d.NH,
                        d.NKV);
  expect_near_all(out, gqa_ref(to_double(qkv), d), 1e-5, 1e-6, "out");
  auto dout = random_vector(d.out(), 14);
  auto dqkv0 = random_vector(d.qkv(), 15);
  auto dqkv = dqkv0;
  gqa_attention_backward(dqkv.data(), datt.data(), dout.data(), qkv.data(),
                         att.data(), d.B, d.T, d.C, d.NH, d.NKV);
  expect_near_all(increment(dqkv, dqkv0),
                  finite_difference([&](const std::vector<double>& v) {
                    return weighted_sum(gqa_ref(v, d), dout);
                  }, to_double(qkv)),
                  1e-3, 1e-5, "dqkv");
}

TEST(GqaAttention, OneKeyValueHeadPerQueryHeadIsMultiHeadAttentionBitForBit) {
  const int B = 2, T = 70, C = 32, NH = 4;  // T past one row block of 64
  auto qkv = random_vector(size_t(B) * T * 3 * C, 16);
  auto dout = random_vector(size_t(B) * T * C, 17);
  std::vector<float> o1(size_t(B) * T * C), o2(o1.size()), a1(size_t(B) * NH * T * T),
      a2(a1.size()), s(a1.size()), d1(qkv.size(), 0.0f), d2(qkv.size(), 0.0f);
  attention_forward(o1.data(), a1.data(), qkv.data(), B, T, C, NH);
  gqa_attention_forward(o2.data(), a2.data(), qkv.data(), B, T, C, NH, NH);
  attention_backward(d1.data(), s.data(), dout.data(), qkv.data(), a1.data(), B, T, C, NH);
  gqa_attention_backward(d2.data(), s.data(), dout.data(), qkv.data(), a2.data(), B,
                         T, C, NH, NH);
  EXPECT_TRUE(bitwise_equal(o1, o2));
  EXPECT_TRUE(bitwise_equal(d1, d2));
  // And at --dtype bf16.
  std::fill(d1.begin(), d1.end(), 0.0f);
  std::fill(d2.begin(), d2.end(), 0.0f);
  attention_forward_bf16(o1.data(), a1.data(), qkv.data(), B, T, C, NH);
  gqa_attention_forward_bf16(o2.data(), a2.data(), qkv.data(), B, T, C, NH, NH);
  attention_backward_bf16(d1.data(), s.data(), dout.data(), qkv.data(), a1.data(), B, T, C, NH);
  gqa_attention_backward_bf16(d2.data(), s.data(), dout.data(), qkv.data(), a2.data(), B, T, C, NH,
                              NH);
  EXPECT_TRUE(bitwise_equal(o1, o2));
  EXPECT_TRUE(bitwise_equal(d1, d2));
}

// ---- Determinism -----------------------------------------------------------------------------

TEST(LlamaKernels, SameBitsForOneAndTwoThreads) {
  const Gqa d{3, 66, 64, 8, 2};
  const int N = d.B * d.T, F = 96;
  auto x = random_vector(size_t(N) * d.C, 18), w = random_vector(d.C, 19);
  auto qkv = random_vector(d.qkv(), 20), dout = random_vector(d.out(), 21);
  auto gu = random_vector(size_t(N) * 2 * F, 22), dy = random_vector(size_t(N) * F, 23);
  std::vector<float> cos(size_t(d.T) * d.hs() / 2), sin(cos.size());
  rope_table(cos.data(), sin.data(), d.T, d.hs(), 10000.0);
  auto run = [&] {
    std::vector<float> all, y(x.size()), r(N), dx(x.size(), 0.0f), dw(d.C, 0.0f);
    rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), N, d.C, 1e-5f);
    rmsnorm_backward(dx.data(), dw.data(), y.data(), x.data(), w.data(), r.data(), N, d.C);
    auto q = qkv;
    rope_forward(q.data(), cos.data(), sin.data(), d.B, d.T, d.ld(), d.NH + d.NKV, d.hs());
    std::vector<float> o(d.out()), a(d.att()), s(d.att()), dq(d.qkv(), 0.0f);
    gqa_attention_forward(o.data(), a.data(), q.data(), d.B, d.T, d.C, d.NH, d.NKV);
    gqa_attention_backward(dq.data(), s.data(), dout.data(), q.data(), a.data(), d.B,
                           d.T, d.C, d.NH, d.NKV);
    rope_backward(dq.data(), cos.data(), sin.data(), d.B, d.T, d.ld(), d.NH + d.NKV, d.hs());
    std::vector<float> m(size_t(N) * F), dgu(gu.size(), 0.0f);
    swiglu_forward(m.data(), gu.data(), N, F);
    swiglu_backward(dgu.data(), dy.data(), gu.data(), N, F);
    for (const auto* v : {&y, &dx, &dw, &o, &dq, &m, &dgu}) all.insert(all.end(), v->begin(), v->end());
    return all;
  };
  std::vector<float> one, two;
  run_with_threads(1, [&] { one = run(); });
  run_with_threads(2, [&] { two = run(); });
  EXPECT_TRUE(bitwise_equal(one, two));
}

}  // namespace
}  // namespace strata::kernels
