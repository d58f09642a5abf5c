#include "core/kernels/crossentropy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::expect_near_all;
using testing::finite_difference;
using testing::increment;
using testing::random_vector;
using testing::to_double;

// F.cross_entropy(logits, targets) (mean over rows) in double; optionally the softmax.
double crossentropy_ref(const std::vector<double>& logits, const std::vector<int32_t>& targets,
                        int N, int V, std::vector<double>* probs = nullptr) {
  double total = 0;
  for (int n = 0; n < N; ++n) {
    const double* x = logits.data() + static_cast<size_t>(n) * V;
    double max = x[0];
    for (int v = 1; v < V; ++v) max = std::max(max, x[v]);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(x[v] - max);
    total += max + std::log(sum) - x[targets[n]];
    if (probs != nullptr) {
      for (int v = 0; v < V; ++v) probs->push_back(std::exp(x[v] - max) / sum);
    }
  }
  return total / N;
}

std::vector<int32_t> make_targets(int N, int V, uint64_t seed) {
  testing::TestRng rng(seed);
  std::vector<int32_t> t(N);
  for (auto& x : t) x = static_cast<int32_t>(rng.next() % V);
  return t;
}

TEST(CrossEntropyTest, ForwardMatchesDoubleReference) {
  const int N = 50, V = 257;
  auto logits = random_vector(N * V, 1, -8.0f, 8.0f);
  auto targets = make_targets(N, V, 2);
  std::vector<float> probs(N * V);
  const float loss = crossentropy_forward(probs.data(), logits.data(), targets.data(), N, V);
  std::vector<double> probs_ref;
  const double loss_ref = crossentropy_ref(to_double(logits), targets, N, V, &probs_ref);
  EXPECT_NEAR(loss, loss_ref, 1e-6 * std::abs(loss_ref));
  expect_near_all(probs, probs_ref, 1e-5, 1e-9, "probs");
}

TEST(CrossEntropyTest, LargeLogitsStayFinite) {
  // exp(1000) overflows float: only a max-subtracted softmax gets this right.
  const int V = 4;
  std::vector<float> logits = {1000.0f, 999.0f, -1000.0f, 998.0f};
  std::vector<int32_t> targets = {1};
  std::vector<float> probs(V);
  const float loss = crossentropy_forward(probs.data(), logits.data(), targets.data(), 1, V);
  const double want = std::log(1 + std::exp(1.0) + std::exp(-1.0));  // -log_softmax[1]
  EXPECT_NEAR(loss, want, 1e-6);
  EXPECT_EQ(probs[2], 0.0f);
  for (float p : probs) EXPECT_TRUE(std::isfinite(p));
}

TEST(CrossEntropyTest, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int N = 4, V = 9;
  auto logits = random_vector(N * V, 3, -3.0f, 3.0f);
  auto targets = make_targets(N, V, 4);
  std::vector<float> probs(N * V);
  (void)crossentropy_forward(probs.data(), logits.data(), targets.data(), N, V);
  auto d0 = random_vector(N * V, 5);
  auto d = d0;
  crossentropy_backward(d.data(), probs.data(), targets.data(), 1.0f / N, N, V);
  auto fd = finite_difference(
      [&](const std::vector<double>& x) { return crossentropy_ref(x, targets, N, V); },
      to_double(logits));
  expect_near_all(increment(d, d0), fd, 1e-4, 1e-6, "dlogits");
}

TEST(CrossEntropyTest, BackwardScalesByDloss) {
  const int N = 2, V = 3;
  std::vector<float> probs = {0.5f, 0.25f, 0.25f, 0.1f, 0.2f, 0.7f};
  std::vector<int32_t> targets = {0, 2};
  std::vector<float> d(N * V, 1.0f);
  crossentropy_backward(d.data(), probs.data(), targets.data(), 2.0f, N, V);
  const std::vector<float> want = {1.0f + (0.5f - 1.0f) * 2.0f, 1.0f + 0.25f * 2.0f,
                                   1.0f + 0.25f * 2.0f,         1.0f + 0.1f * 2.0f,
                                   1.0f + 0.2f * 2.0f,          1.0f + (0.7f - 1.0f) * 2.0f};
  EXPECT_EQ(d, want);
}

}  // namespace
}  // namespace strata::kernels
