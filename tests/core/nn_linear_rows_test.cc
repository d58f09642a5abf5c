// The nn.Linear-layout linear by ranges of weight rows (Note [nn.Linear in row chunks] in
// core/kernels/nn_linear.h): the weight (out, in) computed as K slices of rows (output features),
// each slice's weights and weight gradient in buffers of their own (as a gathered slice would
// be), gives exactly the bits of the whole range [0, out), for K in {1, 2, 4}, on 1 or 2 threads,
// at fp32 and bf16; and the whole range matches a float64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/kernels/linear.h"
#include "core/kernels/nn_linear.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::ExpectSameBits;
using testing::random_vector;
using testing::run_with_threads;

struct Shape {
  int N, in, out, ldy;  // ldy >= out: y and dy may be a wider buffer's columns (LLaMA's gate|up)
};

struct Kernels {
  decltype(&nn_linear_forward_rows) forward;
  decltype(&nn_linear_backward_rows) backward;
  const char* name;
};
const Kernels kFp32{nn_linear_forward_rows, nn_linear_backward_rows, "fp32"};
const Kernels kBf16{nn_linear_forward_rows_bf16, nn_linear_backward_rows_bf16, "bf16"};

std::string Describe(const Shape& s, int K, int threads, const Kernels& f) {
  return std::string(f.name) + " N " + std::to_string(s.N) + ", in " + std::to_string(s.in) +
         ", out " + std::to_string(s.out) + ", K " + std::to_string(K) + ", " +
         std::to_string(threads) + " threads";
}

// The inputs of one case; dw is pre-filled (the backward accumulates into it), dx is garbage
// (the first slice overwrites it).
struct Case {
  Shape s;
  std::vector<float> x, w, dy, dw0;
  Case(Shape shape, uint64_t seed) : s(shape) {
    x = random_vector(size_t(s.N) * s.in, seed);
    w = random_vector(size_t(s.out) * s.in, seed + 1, -0.1f, 0.1f);
    dy = random_vector(size_t(s.N) * s.ldy, seed + 2, -0.01f, 0.01f);
    dw0 = random_vector(size_t(s.out) * s.in, seed + 3);
  }
};

struct Result {
  std::vector<float> y, dx, dw;
};

// The rows in K slices in order, each slice's weights copied out as a gathered slice would be.
Result Sliced(const Case& c, int K, const Kernels& f) {
  const Shape& s = c.s;
  Result r{std::vector<float>(size_t(s.N) * s.ldy, 5.0f),
           std::vector<float>(size_t(s.N) * s.in, 9.0f), c.dw0};
  for (int j = 0; j < K; ++j) {
    const int r0 = LinearChunkBegin(s.out, j * kLinearChunks / K);
    const int r1 = LinearChunkBegin(s.out, (j + 1) * kLinearChunks / K);
    const size_t off = size_t(r0) * s.in, len = size_t(r1 - r0) * s.in;
    const std::vector<float> w(c.w.begin() + off, c.w.begin() + off + len);
    f.forward(r.y.data(), s.ldy, c.x.data(), w.data(), s.N, s.in, s.out, r0, r1);
    std::vector<float> dw(r.dw.begin() + off, r.dw.begin() + off + len);
    f.backward(r.dx.data(), j == 0, dw.data(), c.dy.data(), s.ldy, c.x.data(), w.data(), s.N, s.in,
               s.out, r0, r1);
    std::copy(dw.begin(), dw.end(), r.dw.begin() + off);
  }
  return r;
}

// Small (an empty first chunk, one tile), ragged (not multiples of 64), a wider y, and shapes of
// several tiles, wide and narrow (llama-small's gate/up and down among them).
const Shape kShapes[] = {{64, 48, 40, 40},      {33, 40, 24, 56},     {100, 72, 200, 200},
                         {256, 128, 512, 1024}, {256, 512, 128, 128}, {512, 384, 1024, 2048},
                         {512, 1024, 384, 384}};

TEST(NnLinearRowsTest, SlicesGiveTheWholeRangesBits) {
  uint64_t seed = 300;
  for (const Kernels& f : {kFp32, kBf16}) {
    for (const Shape& s : kShapes) {
      const Case c(s, seed += 10);
      Result whole_one_thread;
      for (int threads : {1, 2}) {
        Result whole;
        run_with_threads(threads, [&] { whole = Sliced(c, 1, f); });
        if (threads == 1) {
          whole_one_thread = whole;
        } else {
          const std::string what = Describe(s, 1, 2, f) + " vs 1 thread";
          ExpectSameBits(whole.y, whole_one_thread.y, what + ": y");
          ExpectSameBits(whole.dx, whole_one_thread.dx, what + ": dx");
          ExpectSameBits(whole.dw, whole_one_thread.dw, what + ": dw");
        }
        for (int K : {2, 4}) {
          Result sliced;
          run_with_threads(threads, [&] { sliced = Sliced(c, K, f); });
          const std::string what = Describe(s, K, threads, f) + ", sliced vs whole";
          ExpectSameBits(sliced.y, whole.y, what + ": y");
          ExpectSameBits(sliced.dx, whole.dx, what + ": dx");
          ExpectSameBits(sliced.dw, whole.dw, what + ": dw");
        }
      }
    }
  }
}

// The whole range against float64: y = x W^T (columns past `out` untouched), dx = dy W
// (overwritten), dw = dw0 + dy^T x.
TEST(NnLinearRowsTest, TheWholeRangeIsTheLinear) {
  for (const Shape& s : {kShapes[1], kShapes[3], kShapes[6]}) {
    const Case c(s, 77);
    const Result r = Sliced(c, 1, kFp32);
    std::vector<double> y(size_t(s.N) * s.ldy, 5.0), dx(size_t(s.N) * s.in, 0.0),
        dw(c.dw0.begin(), c.dw0.end());
    for (int n = 0; n < s.N; ++n) {
      for (int o = 0; o < s.out; ++o) {
        double acc = 0;
        const double g = c.dy[size_t(n) * s.ldy + o];
        for (int i = 0; i < s.in; ++i) {
          acc += double(c.x[size_t(n) * s.in + i]) * c.w[size_t(o) * s.in + i];
          dx[size_t(n) * s.in + i] += g * c.w[size_t(o) * s.in + i];
          dw[size_t(o) * s.in + i] += g * c.x[size_t(n) * s.in + i];
        }
        y[size_t(n) * s.ldy + o] = acc;
      }
    }
    testing::expect_near_all(r.y.data(), y.data(), y.size(), 1e-4, 1e-5, "y");
    testing::expect_near_all(r.dx.data(), dx.data(), dx.size(), 1e-4, 1e-6, "dx");
    testing::expect_near_all(r.dw.data(), dw.data(), dw.size(), 1e-4, 1e-4, "dw");
  }
}

}  // namespace
}  // namespace strata::kernels
