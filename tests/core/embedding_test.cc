#include "core/kernels/embedding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
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

std::vector<double> embedding_ref(const std::vector<int32_t>& tokens,
                                  const std::vector<double>& wte, const std::vector<double>& wpe,
                                  int B, int T, int C) {
  std::vector<double> out(static_cast<size_t>(B) * T * C);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      for (int c = 0; c < C; ++c) {
        out[(b * T + t) * C + c] = wte[tokens[b * T + t] * C + c] + wpe[t * C + c];
      }
    }
  }
  return out;
}

// Tokens with many repeats, so that dwte rows receive several additions.
std::vector<int32_t> make_tokens(int n, int V, uint64_t seed) {
  testing::TestRng rng(seed);
  std::vector<int32_t> tokens(n);
  for (auto& t : tokens) t = static_cast<int32_t>(rng.next() % V);
  return tokens;
}

TEST(EmbeddingTest, ForwardAddsTokenAndPositionRows) {
  const int B = 3, T = 40, C = 20, V = 11;
  auto tokens = make_tokens(B * T, V, 1);
  auto wte = random_vector(V * C, 2);
  auto wpe = random_vector((T + 5) * C, 3);  // wpe may hold more positions than T
  std::vector<float> out(B * T * C);
  embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      for (int c = 0; c < C; ++c) {
        ASSERT_EQ(out[(b * T + t) * C + c], wte[tokens[b * T + t] * C + c] + wpe[t * C + c]);
      }
    }
  }
}

TEST(EmbeddingTest, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int B = 2, T = 5, C = 6, V = 4;
  auto tokens = make_tokens(B * T, V, 4);
  auto wte = random_vector(V * C, 5), wpe = random_vector(T * C, 6);
  auto dout = random_vector(B * T * C, 7);
  auto dwte0 = random_vector(V * C, 8), dwpe0 = random_vector(T * C, 9);
  auto dwte = dwte0, dwpe = dwpe0;
  embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, 0, V);
  const auto wte_d = to_double(wte), wpe_d = to_double(wpe);
  auto fd_wte = finite_difference(
      [&](const std::vector<double>& v) {
        return weighted_sum(embedding_ref(tokens, v, wpe_d, B, T, C), dout);
      },
      wte_d);
  auto fd_wpe = finite_difference(
      [&](const std::vector<double>& v) {
        return weighted_sum(embedding_ref(tokens, wte_d, v, B, T, C), dout);
      },
      wpe_d);
  expect_near_all(increment(dwte, dwte0), fd_wte, 1e-5, 1e-5, "dwte");
  expect_near_all(increment(dwpe, dwpe0), fd_wpe, 1e-5, 1e-5, "dwpe");
}

// GPT-2 sized batch with a skewed token distribution (most positions hold token 7).
TEST(EmbeddingTest, BackwardLargeBatchMatchesDoubleSums) {
  const int B = 8, T = 256, C = 384, V = 256;
  auto tokens = make_tokens(B * T, V, 10);
  for (int i = 0; i < B * T; i += 2) tokens[i] = 7;
  auto dout = random_vector(static_cast<size_t>(B) * T * C, 11);
  std::vector<float> dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, 0, V);
  std::vector<double> dwte_ref(V * C, 0.0), dwpe_ref(T * C, 0.0);
  for (int r = 0; r < B * T; ++r) {
    for (int c = 0; c < C; ++c) {
      dwte_ref[tokens[r] * C + c] += dout[static_cast<size_t>(r) * C + c];
      dwpe_ref[(r % T) * C + c] += dout[static_cast<size_t>(r) * C + c];
    }
  }
  expect_near_all(dwte, dwte_ref, 1e-4, 1e-4, "dwte");
  expect_near_all(dwpe, dwpe_ref, 1e-5, 1e-5, "dwpe");
}

// A vocabulary range writes only its rows, in a buffer that starts at its first row, and gives the
// bits of the full call's rows (the wte gradient built slice by slice, Note [Gradient
// contributions] in models/gpt2/gpt_blocks.h); without dwpe no position gradient is made.
TEST(EmbeddingTest, BackwardVocabRangeGivesTheFullCallsRows) {
  const int B = 3, T = 16, C = 8, V = 10;
  auto tokens = make_tokens(B * T, V, 12);
  auto dout = random_vector(static_cast<size_t>(B) * T * C, 13);
  std::vector<float> full(V * C, 0.0f), dwpe(T * C, 0.0f);
  embedding_backward(full.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, 0, V);
  std::vector<float> sliced(V * C, 0.0f);
  for (int v0 = 0; v0 < V; v0 += 3) {
    const int v1 = std::min(V, v0 + 3);
    std::vector<float> slice(static_cast<size_t>(v1 - v0) * C, 0.0f);
    embedding_backward(slice.data(), nullptr, dout.data(), tokens.data(), B, T, C, v0, v1);
    std::copy(slice.begin(), slice.end(), sliced.begin() + static_cast<long>(v0) * C);
  }
  EXPECT_EQ(0, std::memcmp(full.data(), sliced.data(), full.size() * sizeof(float)));
}

}  // namespace
}  // namespace strata::kernels
