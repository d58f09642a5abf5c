// Every CPU kernel gives bit-identical results run to run and on 1 or 2 threads (README.md,
// "Determinism"): each case runs once in a 1-thread TBB arena and
// twice in a 2-thread arena and compares all outputs byte for byte.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/kernels/adamw.h"
#include "core/kernels/norms.h"
#include "core/kernels/attention.h"
#include "core/kernels/crossentropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/linear.h"
#include "core/kernels/matmul.h"
#include "core/kernels/residual.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::bitwise_equal;
using testing::random_vector;
using testing::run_with_threads;
using Outputs = std::vector<std::vector<float>>;

void expect_deterministic(const std::function<Outputs()>& compute) {
  auto run = [&](int threads) {
    Outputs out;
    run_with_threads(threads, [&] {
      EXPECT_EQ(tbb::this_task_arena::max_concurrency(), threads);
      out = compute();
    });
    return out;
  };
  const Outputs one = run(1);
  const Outputs two = run(2);
  const Outputs two_again = run(2);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(one[i], two[i])) << "output " << i << ": 1 vs 2 threads";
    EXPECT_TRUE(bitwise_equal(two[i], two_again[i])) << "output " << i << ": run to run";
  }
}

std::vector<int32_t> tokens(int n, int V, uint64_t seed) {
  testing::TestRng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.next() % V);
  return t;
}

// The GEMM shapes of a GPT-2 small step (B*T = 2048 rows), where OpenBLAS's own threading
// gives different bits for 1 and 2 threads.
TEST(KernelDeterminismTest, Sgemm) {
  struct Shape {
    bool ta, tb;
    int M, N, K;
  };
  for (const Shape& s : {Shape{false, false, 2048, 1152, 384}, Shape{false, true, 2048, 384, 1152},
                         Shape{true, false, 384, 1152, 2048}}) {
    expect_deterministic([&] {
      auto A = random_vector(static_cast<size_t>(s.M) * s.K, 1);
      auto B = random_vector(static_cast<size_t>(s.K) * s.N, 2);
      auto C = random_vector(static_cast<size_t>(s.M) * s.N, 3);
      sgemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), s.ta ? s.M : s.K, B.data(), s.tb ? s.K : s.N,
            1.0f, C.data(), s.N);
      return Outputs{C};
    });
  }
}

TEST(KernelDeterminismTest, Linear) {
  expect_deterministic([] {
    const int N = 1000, C = 384, OC = 1152;
    auto inp = random_vector(static_cast<size_t>(N) * C, 1), w = random_vector(C * OC, 2);
    auto bias = random_vector(OC, 3), dout = random_vector(static_cast<size_t>(N) * OC, 4);
    std::vector<float> out(static_cast<size_t>(N) * OC), dinp(static_cast<size_t>(N) * C, 0.0f),
        dw(C * OC, 0.0f), db(OC, 0.0f);
    linear_forward(out.data(), inp.data(), w.data(), bias.data(), N, C, OC);
    linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C, OC);
    return Outputs{out, dinp, dw, db};
  });
}

TEST(KernelDeterminismTest, LayerNorm) {
  expect_deterministic([] {
    const int N = 2048, C = 384;
    auto x = random_vector(N * C, 1), w = random_vector(C, 2), b = random_vector(C, 3);
    auto dout = random_vector(N * C, 4);
    std::vector<float> y(N * C), mean(N), rstd(N), dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                       mean.data(), rstd.data(), N, C);
    return Outputs{y, mean, rstd, dx, dw, db};
  });
}

TEST(KernelDeterminismTest, Gelu) {
  expect_deterministic([] {
    const long n = 2048L * 1536 / 4 + 13;  // ragged last chunk
    auto x = random_vector(n, 1, -5.0f, 5.0f), dout = random_vector(n, 2);
    std::vector<float> y(n), dx(n, 0.0f);
    gelu_forward(y.data(), x.data(), n);
    gelu_backward(dx.data(), x.data(), dout.data(), n);
    return Outputs{y, dx};
  });
}

TEST(KernelDeterminismTest, Attention) {
  expect_deterministic([] {
    const int B = 2, T = 256, C = 384, NH = 6;
    auto qkv = random_vector(static_cast<size_t>(B) * T * 3 * C, 1, -2.0f, 2.0f);
    auto dout = random_vector(static_cast<size_t>(B) * T * C, 2);
    std::vector<float> out(static_cast<size_t>(B) * T * C),
        att(static_cast<size_t>(B) * NH * T * T), datt(att.size()), dqkv(qkv.size(), 0.0f);
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    attention_backward(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
    return Outputs{out, att, dqkv};
  });
}

TEST(KernelDeterminismTest, Embedding) {
  expect_deterministic([] {
    const int B = 8, T = 256, C = 384, V = 256;
    auto tok = tokens(B * T, V, 1);
    for (int i = 0; i < B * T; i += 3) tok[i] = 32;  // a frequent token, as spaces in text
    auto wte = random_vector(V * C, 2), wpe = random_vector(T * C, 3);
    auto dout = random_vector(static_cast<size_t>(B) * T * C, 4);
    std::vector<float> out(static_cast<size_t>(B) * T * C), dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
    embedding_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
    embedding_backward(dwte.data(), dwpe.data(), dout.data(), tok.data(), B, T, C, 0, V);
    return Outputs{out, dwte, dwpe};
  });
}

TEST(KernelDeterminismTest, CrossEntropy) {
  expect_deterministic([] {
    const int N = 2048, V = 256;
    auto logits = random_vector(N * V, 1, -6.0f, 6.0f);
    auto tgt = tokens(N, V, 2);
    std::vector<float> probs(N * V), dlogits(N * V, 0.0f);
    const float loss = crossentropy_forward(probs.data(), logits.data(), tgt.data(), N, V);
    crossentropy_backward(dlogits.data(), probs.data(), tgt.data(), 1.0f / N, N, V);
    return Outputs{probs, dlogits, {loss}};
  });
}

TEST(KernelDeterminismTest, Residual) {
  expect_deterministic([] {
    const long n = 2048L * 384 + 5;
    auto a = random_vector(n, 1), b = random_vector(n, 2), dout = random_vector(n, 3);
    std::vector<float> out(n), da(n, 0.0f), db(n, 0.0f);
    residual_forward(out.data(), a.data(), b.data(), n);
    residual_backward(da.data(), db.data(), dout.data(), n);
    return Outputs{out, da, db};
  });
}

TEST(KernelDeterminismTest, AdamWAndNorm) {
  expect_deterministic([] {
    const long n = 1000003;
    auto p = random_vector(n, 1), g = random_vector(n, 2);
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    const double norm = std::sqrt(sum_of_squares(g.data(), n));
    AdamWParams hp;
    hp.weight_decay = 0.1f;
    for (long step = 1; step <= 2; ++step) {
      hp.step = step;
      adamw_update(p.data(), g.data(), m.data(), v.data(), n, hp, clip_coefficient(norm, 1.0f));
    }
    // The norm's bits, as two floats.
    const auto bits = std::bit_cast<uint64_t>(norm);
    return Outputs{p,
                   m,
                   v,
                   {std::bit_cast<float>(static_cast<uint32_t>(bits)),
                    std::bit_cast<float>(static_cast<uint32_t>(bits >> 32))}};
  });
}

}  // namespace
}  // namespace strata::kernels
