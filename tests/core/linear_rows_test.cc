// The linear layer by weight-row ranges (Note [Linear forward in row chunks] in
// core/kernels/linear.h): a linear computed as K slices of weight rows, each slice's weights in a
// buffer of its own (as a gathered slice would be), gives exactly the bits of the whole
// linear_forward / linear_backward, for K in {1, 2, 4} and on 1 or 2 threads; the chunked forward
// still matches a float64 reference; the chunk boundaries follow their rule.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/kernels/linear.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::ExpectSameBits;
using testing::random_vector;
using testing::run_with_threads;

struct Shape {
  int N, C, OC;
};

std::string Describe(const Shape& s, int K, int threads) {
  return "N " + std::to_string(s.N) + ", C " + std::to_string(s.C) + ", OC " +
         std::to_string(s.OC) + ", K " + std::to_string(K) + ", " + std::to_string(threads) +
         " threads";
}

// The inputs of one case, and the gradients pre-filled (backward accumulates).
struct Case {
  Shape s;
  std::vector<float> inp, weight, bias, dout, dinp0, dweight0, dbias0;
  explicit Case(Shape shape, uint64_t seed) : s(shape) {
    const size_t n = s.N, c = s.C, oc = s.OC;
    inp = random_vector(n * c, seed);
    weight = random_vector(c * oc, seed + 1, -0.1f, 0.1f);
    bias = random_vector(oc, seed + 2);
    dout = random_vector(n * oc, seed + 3, -0.01f, 0.01f);
    dinp0 = random_vector(n * c, seed + 4);
    dweight0 = random_vector(c * oc, seed + 5);
    dbias0 = random_vector(oc, seed + 6);
  }
};

struct Result {
  std::vector<float> out, dinp, dweight, dbias;
};

Result Whole(const Case& k) {
  const Shape& s = k.s;
  Result r{std::vector<float>(static_cast<size_t>(s.N) * s.OC, 7.0f), k.dinp0, k.dweight0,
           k.dbias0};
  linear_forward(r.out.data(), k.inp.data(), k.weight.data(), k.bias.data(), s.N, s.C, s.OC);
  linear_backward(r.dinp.data(), r.dweight.data(), r.dbias.data(), k.dout.data(), k.inp.data(),
                  k.weight.data(), s.N, s.C, s.OC);
  return r;
}

// Slice j of K is chunks [j*4/K, (j+1)*4/K); its weights and weight gradient live in buffers of
// their own. The bias goes with the forward of the slices that start at row 0, dbias with the
// last slice's backward.
Result Sliced(const Case& k, int K) {
  const Shape& s = k.s;
  Result r{std::vector<float>(static_cast<size_t>(s.N) * s.OC, -3.0f), k.dinp0, k.dweight0,
           k.dbias0};
  for (int j = 0; j < K; ++j) {
    const int r0 = LinearChunkBegin(s.C, j * kLinearChunks / K);
    const int r1 = LinearChunkBegin(s.C, (j + 1) * kLinearChunks / K);
    const size_t off = static_cast<size_t>(r0) * s.OC, len = static_cast<size_t>(r1 - r0) * s.OC;
    const std::vector<float> w(k.weight.begin() + off, k.weight.begin() + off + len);
    // The bias goes with every slice that starts at row 0 (leading slices may be empty).
    linear_forward_rows(r.out.data(), k.inp.data(), w.data(), r0 == 0 ? k.bias.data() : nullptr,
                        s.N, s.C, s.OC, r0, r1);
  }
  for (int j = 0; j < K; ++j) {
    const int r0 = LinearChunkBegin(s.C, j * kLinearChunks / K);
    const int r1 = LinearChunkBegin(s.C, (j + 1) * kLinearChunks / K);
    const size_t off = static_cast<size_t>(r0) * s.OC, len = static_cast<size_t>(r1 - r0) * s.OC;
    const std::vector<float> w(k.weight.begin() + off, k.weight.begin() + off + len);
    std::vector<float> dw(r.dweight.begin() + off, r.dweight.begin() + off + len);
    linear_backward_rows(r.dinp.data(), dw.data(), j == K - 1 ? r.dbias.data() : nullptr,
                         k.dout.data(), k.inp.data(), w.data(), s.N, s.C, s.OC, r0, r1);
    std::copy(dw.begin(), dw.end(), r.dweight.begin() + off);
  }
  return r;
}

void ExpectSameResult(const Result& got, const Result& want, const std::string& what) {
  ExpectSameBits(got.out, want.out, what + ": out");
  ExpectSameBits(got.dinp, want.dinp, what + ": dinp");
  ExpectSameBits(got.dweight, want.dweight, what + ": dweight");
  ExpectSameBits(got.dbias, want.dbias, what + ": dbias");
}

// Small (empty first chunk, one GEMM tile), ragged (C, OC not multiples of 64), and shapes with
// several GEMM tiles, wide and narrow.
const Shape kShapes[] = {{64, 48, 80},     {33, 40, 24},     {100, 200, 72},
                         {256, 128, 512},  {256, 512, 128},  {128, 384, 1536}};

TEST(LinearRowsTest, SlicesGiveTheWholeLinearsBits) {
  uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    const Case k(s, seed += 10);
    Result whole_one_thread;
    for (int threads : {1, 2}) {
      Result whole;
      run_with_threads(threads, [&] { whole = Whole(k); });
      if (threads == 1) {
        whole_one_thread = whole;
      } else {
        ExpectSameResult(whole, whole_one_thread, Describe(s, 1, 2) + " vs 1 thread");
      }
      for (int K : {1, 2, 4}) {
        Result sliced;
        run_with_threads(threads, [&] { sliced = Sliced(k, K); });
        ExpectSameResult(sliced, whole, Describe(s, K, threads) + ", sliced vs whole");
      }
    }
  }
}

// out = inp @ W + bias in double.
std::vector<double> ForwardRef(const Case& k, bool with_bias) {
  const Shape& s = k.s;
  std::vector<double> out(static_cast<size_t>(s.N) * s.OC);
  for (int n = 0; n < s.N; ++n) {
    for (int o = 0; o < s.OC; ++o) {
      double sum = with_bias ? k.bias[o] : 0.0;
      for (int c = 0; c < s.C; ++c) {
        sum += static_cast<double>(k.inp[static_cast<size_t>(n) * s.C + c]) *
               k.weight[static_cast<size_t>(c) * s.OC + o];
      }
      out[static_cast<size_t>(n) * s.OC + o] = sum;
    }
  }
  return out;
}

TEST(LinearRowsTest, ChunkedForwardMatchesDoubleReference) {
  for (const Shape& s : {Shape{33, 40, 24}, Shape{100, 200, 72}, Shape{64, 768, 96}}) {
    const Case k(s, 7);
    for (bool with_bias : {true, false}) {
      std::vector<float> out(static_cast<size_t>(s.N) * s.OC, 5.0f);
      linear_forward(out.data(), k.inp.data(), k.weight.data(),
                     with_bias ? k.bias.data() : nullptr, s.N, s.C, s.OC);
      // Sums of C terms of size <= 0.1 in float: the error grows like sqrt(C) ulps.
      testing::expect_near_all(out, ForwardRef(k, with_bias), 1e-5, 1e-5,
                               Describe(s, 1, 1) + (with_bias ? " with bias" : " without bias"));
    }
  }
}

// The backward of any row range, on chunk boundaries or not, adds that range's share: its
// columns of dinp and rows of dweight match the whole backward's within float rounding.
TEST(LinearRowsTest, BackwardOfAnyRowRangeAddsItsShare) {
  const Shape s{70, 200, 72};
  const Case k(s, 3);
  const Result whole = Whole(k);
  for (const auto& [r0, r1] : {std::pair{5, 37}, std::pair{0, 200}, std::pair{100, 101}}) {
    Result part{{}, k.dinp0, k.dweight0, k.dbias0};
    linear_backward_rows(part.dinp.data(), part.dweight.data() + static_cast<size_t>(r0) * s.OC,
                         nullptr, k.dout.data(), k.inp.data(),
                         k.weight.data() + static_cast<size_t>(r0) * s.OC, s.N, s.C, s.OC, r0, r1);
    for (int n = 0; n < s.N; ++n) {
      for (int c = 0; c < s.C; ++c) {
        const size_t i = static_cast<size_t>(n) * s.C + c;
        const float want = c >= r0 && c < r1 ? whole.dinp[i] : k.dinp0[i];
        ASSERT_NEAR(part.dinp[i], want, 1e-5 * (1 + std::abs(want))) << r0 << "," << r1 << " " << i;
      }
    }
    for (int c = 0; c < s.C; ++c) {
      for (int o = 0; o < s.OC; ++o) {
        const size_t i = static_cast<size_t>(c) * s.OC + o;
        const float want = c >= r0 && c < r1 ? whole.dweight[i] : k.dweight0[i];
        ASSERT_NEAR(part.dweight[i], want, 1e-5 * (1 + std::abs(want)))
            << r0 << "," << r1 << " " << i;
      }
    }
    EXPECT_EQ(part.dbias, k.dbias0);  // dbias nullptr: untouched
  }
}

TEST(LinearRowsTest, ZeroInputFeaturesGiveTheBias) {
  const int N = 3, OC = 5;
  const std::vector<float> bias = random_vector(OC, 1);
  std::vector<float> out(N * OC, 9.0f), out_nb(N * OC, 9.0f);
  linear_forward(out.data(), nullptr, nullptr, bias.data(), N, 0, OC);
  linear_forward(out_nb.data(), nullptr, nullptr, nullptr, N, 0, OC);
  for (int n = 0; n < N; ++n) {
    for (int o = 0; o < OC; ++o) {
      EXPECT_EQ(out[n * OC + o], bias[o]);
      EXPECT_EQ(out_nb[n * OC + o], 0.0f);
    }
  }
}

TEST(LinearRowsTest, ChunkBoundariesFollowTheRule) {
  for (int C = 0; C <= 5000; ++C) {
    EXPECT_EQ(LinearChunkBegin(C, 0), 0) << C;
    EXPECT_EQ(LinearChunkBegin(C, kLinearChunks), C) << C;
    for (int c = 1; c <= kLinearChunks; ++c) {
      ASSERT_LE(LinearChunkBegin(C, c - 1), LinearChunkBegin(C, c)) << C << " chunk " << c;
    }
    for (int c = 1; c < kLinearChunks; ++c) {
      EXPECT_EQ(LinearChunkBegin(C, c) % 16, 0) << C << " chunk " << c;
      EXPECT_LE(LinearChunkBegin(C, c), C) << C << " chunk " << c;
    }
  }
  // GPT-2 small: equal chunks.
  for (int C : {768, 3072}) {
    for (int c = 0; c <= kLinearChunks; ++c) EXPECT_EQ(LinearChunkBegin(C, c), C / 4 * c);
  }
}

}  // namespace
}  // namespace strata::kernels
