// The vocab-parallel kernels (core/kernels/vocab_parallel.h), the tp group simulated in one
// process: each "rank" runs on its slice of a padded vocabulary, and the all-reduces are the left
// fold in rank order that parallel/comm.h promises. Checked against the whole-vocabulary kernels
// (crossentropy.h, embedding.h) and a float64 reference.
#include "core/kernels/vocab_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/kernels/crossentropy.h"
#include "core/kernels/embedding.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::random_vector;

// Sums `ranks` buffers of n floats in place, ((x0 + x1) + x2) + ..., every rank getting the sum.
void FoldSum(std::vector<std::vector<float>>& bufs, size_t offset, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float s = bufs[0][offset + i];
    for (size_t r = 1; r < bufs.size(); ++r) s += bufs[r][offset + i];
    for (auto& b : bufs) b[offset + i] = s;
  }
}

struct Split {
  int tp, rows, V;  // ranks, rows per rank (padded), real vocabulary
  int begin(int r) const { return r * rows; }
  int valid(int r) const { return std::clamp(V - begin(r), 0, rows); }
};

// The loss and each rank's normalized probabilities (N, rows), as models/gpt2/tp_head.cc runs them.
float VocabParallelLoss(const Split& s, const std::vector<float>& logits,
                        const std::vector<int32_t>& targets, int N,
                        std::vector<std::vector<float>>* probs) {
  std::vector<std::vector<float>> local(s.tp), gathered(s.tp), stats(s.tp);
  probs->assign(s.tp, std::vector<float>(size_t(N) * s.rows));
  for (int r = 0; r < s.tp; ++r) {
    local[r].assign(size_t(N) * s.rows, 1e30f);  // padding columns: garbage, never read
    for (int n = 0; n < N; ++n) {
      std::copy_n(logits.begin() + size_t(n) * s.V + s.begin(r), s.valid(r),
                  local[r].begin() + size_t(n) * s.rows);
    }
    gathered[r].assign(size_t(s.tp) * N, 0.0f);
    vocab_parallel_logit_max(gathered[r].data() + size_t(r) * N, local[r].data(), N, s.rows,
                             s.valid(r));
  }
  FoldSum(gathered, 0, size_t(s.tp) * N);
  for (int r = 0; r < s.tp; ++r) {
    stats[r].assign(size_t(3) * N, 0.0f);  // row_max, then the sums
    vocab_parallel_softmax_partial((*probs)[r].data(), stats[r].data(), stats[r].data() + N,
                                   gathered[r].data(), s.tp, local[r].data(), targets.data(), N,
                                   s.rows, s.valid(r), s.begin(r));
  }
  FoldSum(stats, N, size_t(2) * N);
  float loss = 0.0f;
  for (int r = 0; r < s.tp; ++r) {
    const float l = vocab_parallel_crossentropy_forward((*probs)[r].data(), stats[r].data(),
                                                        stats[r].data() + N, N, s.rows);
    if (r == 0) loss = l;
    EXPECT_EQ(std::memcmp(&l, &loss, sizeof(float)), 0) << "rank " << r << "'s loss";
  }
  return loss;
}

std::vector<int32_t> Targets(int N, int V) {
  std::vector<int32_t> t(N);
  for (int n = 0; n < N; ++n) t[n] = (n * 37 + 11) % V;
  t[0] = V - 1;  // the last real id, on the last rank with any real rows
  t[1] = 0;
  return t;
}

TEST(VocabParallelTest, CrossEntropyMatchesTheWholeVocabulary) {
  const int N = 40, V = 200;
  const auto logits = random_vector(size_t(N) * V, 1, -6.0f, 6.0f);
  const auto targets = Targets(N, V);
  std::vector<float> want_probs(size_t(N) * V);
  const float want = crossentropy_forward(want_probs.data(), logits.data(), targets.data(), N, V);
  for (const Split s : {Split{1, 256, V}, Split{2, 128, V}, Split{4, 64, V}, Split{8, 32, V}}) {
    std::vector<std::vector<float>> probs;
    const float loss = VocabParallelLoss(s, logits, targets, N, &probs);
    EXPECT_NEAR(loss, want, 1e-6 * std::abs(want)) << "tp " << s.tp;
    for (int r = 0; r < s.tp; ++r) {
      for (int n = 0; n < N; ++n) {
        for (int c = 0; c < s.rows; ++c) {
          const float got = probs[r][size_t(n) * s.rows + c];
          if (c >= s.valid(r)) {
            ASSERT_EQ(got, 0.0f) << "padding, tp " << s.tp;
            continue;
          }
          ASSERT_NEAR(got, want_probs[size_t(n) * V + s.begin(r) + c], 1e-6) << "tp " << s.tp;
        }
      }
    }
  }
}

// One rank and no padding: the whole kernel's bits.
TEST(VocabParallelTest, OneRankWithoutPaddingGivesTheWholeKernelsBits) {
  const int N = 33, V = 256;
  const auto logits = random_vector(size_t(N) * V, 2, -8.0f, 8.0f);
  const auto targets = Targets(N, V);
  std::vector<float> want_probs(size_t(N) * V);
  const float want = crossentropy_forward(want_probs.data(), logits.data(), targets.data(), N, V);
  std::vector<std::vector<float>> probs;
  const float loss = VocabParallelLoss({1, V, V}, logits, targets, N, &probs);
  EXPECT_EQ(std::memcmp(&loss, &want, sizeof(float)), 0);
  EXPECT_TRUE(testing::bitwise_equal(probs[0], want_probs));
}

// Given the same probabilities, each slice's dlogits are the whole kernel's columns, bit for bit,
// accumulating into what was there; padding columns get 0.
TEST(VocabParallelTest, BackwardGivesTheWholeKernelsColumns) {
  const int N = 20, V = 200, tp = 4, rows = 64;
  const auto probs = random_vector(size_t(N) * V, 3, 0.0f, 1.0f);
  const auto before = random_vector(size_t(N) * V, 4);
  const auto targets = Targets(N, V);
  auto want = before;
  crossentropy_backward(want.data(), probs.data(), targets.data(), 0.125f, N, V);
  const Split s{tp, rows, V};
  for (int r = 0; r < tp; ++r) {
    std::vector<float> p(size_t(N) * rows, 0.0f), d(size_t(N) * rows, 0.0f);
    for (int n = 0; n < N; ++n) {
      for (int c = 0; c < s.valid(r); ++c) {
        p[size_t(n) * rows + c] = probs[size_t(n) * V + s.begin(r) + c];
        d[size_t(n) * rows + c] = before[size_t(n) * V + s.begin(r) + c];
      }
    }
    vocab_parallel_crossentropy_backward(d.data(), p.data(), targets.data(), 0.125f, N, rows,
                                         s.begin(r));
    for (int n = 0; n < N; ++n) {
      for (int c = 0; c < rows; ++c) {
        const float got = d[size_t(n) * rows + c];
        const float expect = c < s.valid(r) ? want[size_t(n) * V + s.begin(r) + c] : 0.0f;
        ASSERT_EQ(std::memcmp(&got, &expect, sizeof(float)), 0) << "rank " << r << " row " << n;
      }
    }
  }
}

// Each rank's rows, summed over the ranks in order, give the owner's wte row exactly, signed
// zeros included; with wpe added after, embedding_forward's bits.
TEST(VocabParallelTest, EmbeddingSumOverRanksIsTheWholeLookup) {
  const int B = 2, T = 9, C = 8, V = 200, tp = 4, rows = 64;
  auto wte = random_vector(size_t(V) * C, 5);
  wte[size_t(V - 1) * C] = -0.0f;
  const auto wpe = random_vector(size_t(T) * C, 6);
  std::vector<int32_t> tokens(B * T);
  for (int i = 0; i < B * T; ++i) tokens[i] = (i * 23) % V;
  tokens[3] = V - 1;
  std::vector<float> want(size_t(B) * T * C);
  embedding_forward(want.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  std::vector<std::vector<float>> outs(tp, std::vector<float>(want.size()));
  for (int r = 0; r < tp; ++r) {
    std::vector<float> mine(size_t(rows) * C, 0.0f);
    const int valid = std::clamp(V - r * rows, 0, rows);
    std::copy_n(wte.begin() + size_t(r) * rows * C, size_t(valid) * C, mine.begin());
    vocab_parallel_embedding_forward(outs[r].data(), tokens.data(), mine.data(), B, T, C, r * rows,
                                     (r + 1) * rows);
  }
  FoldSum(outs, 0, want.size());
  std::vector<float> got = outs[0];
  std::vector<float> lookup(got);  // before wpe: the rows themselves, signed zeros included
  EXPECT_TRUE(std::signbit(lookup[size_t(3) * C]));
  for (int i = 0; i < B * T; ++i) {
    for (int c = 0; c < C; ++c) got[size_t(i) * C + c] += wpe[size_t(i % T) * C + c];
  }
  EXPECT_TRUE(testing::bitwise_equal(got, want));
}

}  // namespace
}  // namespace strata::kernels
