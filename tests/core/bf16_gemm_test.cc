// --dtype bf16 on the CPU kernels (Note [bf16 compute] in core/kernels/dtype.h): every GEMM entry
// of CpuBf16KernelTable() gives exactly the fp32 kernel's bits on operands rounded to bf16 first
// (so the rounding is the GEMMs' operands and nothing else), stays within bf16's rounding of the
// fp32 result, and differs from it (the rounding happens). The table swaps exactly the GEMM
// entries.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/device/kernel_table.h"
#include "core/kernels/attention.h"
#include "core/kernels/bf16_math.h"
#include "core/kernels/linear.h"
#include "core/kernels/matmul.h"
#include "core/kernels/nn_linear.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels {
namespace {

using testing::bitwise_equal;
using testing::random_vector;

std::vector<float> Rounded(std::vector<float> x) {
  for (float& v : x) v = detail::RoundToBf16(v);
  return x;
}

// max |a - b| over max |b|: the error against the result's scale (element-wise relative errors
// are unbounded where a sum cancels to near zero).
double NormwiseRelative(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return err / scale;
}

std::vector<float> Abs(std::vector<float> x) {
  for (float& v : x) v = std::abs(v);
  return x;
}

TEST(Bf16Gemm, SgemmIsTheFp32GemmOfRoundedOperands) {
  // Each transpose pair, with row strides wider than the matrices, on a shape big enough for
  // several tiles (Note [Deterministic GEMM]).
  const int M = 200, N = 144, K = 96, pad = 5;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
      const auto A = random_vector(size_t(ta ? K : M) * lda, 1);
      const auto B = random_vector(size_t(tb ? N : K) * ldb, 2);
      const auto C0 = random_vector(size_t(M) * ldc, 3);
      std::vector<float> got = C0, want = C0, fp32 = C0;
      sgemm_bf16(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 0.25f, got.data(), ldc);
      sgemm(ta, tb, M, N, K, 0.5f, Rounded(A).data(), lda, Rounded(B).data(), ldb, 0.25f,
            want.data(), ldc);
      sgemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 0.25f, fp32.data(), ldc);
      const std::string what = std::string("trans ") + (ta ? "T" : "N") + (tb ? "T" : "N");
      EXPECT_TRUE(bitwise_equal(got, want)) << what;
      EXPECT_FALSE(bitwise_equal(got, fp32)) << what << ": bf16 gave the fp32 bits";
      // Each operand is within 2^-9 relative of its fp32 value, so each product within
      // ~2^-8: |got - fp32| <= 2^-8 * |alpha| * sum_k |a_ik| |b_kj| (plus fp32's own rounding).
      std::vector<float> bound(size_t(M) * ldc, 0.0f);
      sgemm(ta, tb, M, N, K, 1.0f, Abs(A).data(), lda, Abs(B).data(), ldb, 0.0f, bound.data(),
            ldc);
      for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
          const size_t e = size_t(i) * ldc + j;
          ASSERT_LE(std::abs(double(got[e]) - fp32[e]), 0.5 * 0x1p-8 * 1.01 * bound[e] + 1e-5)
              << what << " at (" << i << ", " << j << ")";
        }
      }
    }
  }
}

TEST(Bf16Gemm, LinearRoundsItsGemmOperandsAndKeepsBiasFp32) {
  const int N = 96, C = 160, OC = 112;
  const auto inp = random_vector(size_t(N) * C, 4), weight = random_vector(size_t(C) * OC, 5);
  const auto bias = random_vector(OC, 6), dout = random_vector(size_t(N) * OC, 7);
  std::vector<float> out(size_t(N) * OC), want(out.size());
  linear_forward_bf16(out.data(), inp.data(), weight.data(), bias.data(), N, C, OC);
  linear_forward(want.data(), Rounded(inp).data(), Rounded(weight).data(), bias.data(), N, C, OC);
  EXPECT_TRUE(bitwise_equal(out, want));

  std::vector<float> dinp(size_t(N) * C, 0.5f), dw(size_t(C) * OC, 0.25f), db(OC, 1.0f);
  std::vector<float> dinp_want = dinp, dw_want = dw, db_want = db, db_fp32 = db;
  linear_backward_bf16(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(),
                       N, C, OC);
  linear_backward(dinp_want.data(), dw_want.data(), nullptr, Rounded(dout).data(),
                  Rounded(inp).data(), Rounded(weight).data(), N, C, OC);
  // dbias is a plain column sum of the fp32 dout, not a GEMM.
  std::vector<float> unused_dw(dw.size());
  linear_backward(nullptr, unused_dw.data(), db_fp32.data(), dout.data(), inp.data(),
                  weight.data(), N, C, OC);
  EXPECT_TRUE(bitwise_equal(dinp, dinp_want));
  EXPECT_TRUE(bitwise_equal(dw, dw_want));
  EXPECT_TRUE(bitwise_equal(db, db_fp32));

  // The row slices keep their contract at bf16: chunk-boundary slices give the whole's bits.
  const int mid = LinearChunkBegin(C, 2);
  std::vector<float> sliced(out.size());
  linear_forward_rows_bf16(sliced.data(), inp.data(), weight.data(), bias.data(), N, C, OC, 0,
                           mid);
  linear_forward_rows_bf16(sliced.data(), inp.data(), weight.data() + size_t(mid) * OC, nullptr,
                           N, C, OC, mid, C);
  EXPECT_TRUE(bitwise_equal(sliced, out));
}

TEST(Bf16Gemm, AttentionRoundsEveryGemmOperandAndTracksFp32) {
  const int B = 2, T = 80, C = 48, NH = 3;
  const auto qkv = random_vector(size_t(B) * T * 3 * C, 8, -2.0f, 2.0f);
  const auto dout = random_vector(size_t(B) * T * C, 9);
  std::vector<float> out(size_t(B) * T * C), att(size_t(B) * NH * T * T);
  std::vector<float> out32 = out, att32 = att;
  attention_forward_bf16(out.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_forward(out32.data(), att32.data(), qkv.data(), B, T, C, NH);
  EXPECT_FALSE(bitwise_equal(out, out32));
  EXPECT_LT(NormwiseRelative(out, out32), 1e-2);
  EXPECT_LT(NormwiseRelative(att, att32), 1e-2);
  // The scores' operands are rounded q and k; att itself is stored fp32 (not a multiple of 2^16
  // in its bits everywhere).
  bool att_has_fp32_bits = false;
  for (float a : att) att_has_fp32_bits |= a != detail::RoundToBf16(a);
  EXPECT_TRUE(att_has_fp32_bits);

  std::vector<float> dqkv(qkv.size(), 0.0f), datt(att.size()), dqkv32 = dqkv, datt32 = datt;
  attention_backward_bf16(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                          NH);
  attention_backward(dqkv32.data(), datt32.data(), dout.data(), qkv.data(), att32.data(), B, T,
                     C, NH);
  EXPECT_FALSE(bitwise_equal(dqkv, dqkv32));
  EXPECT_LT(NormwiseRelative(dqkv, dqkv32), 1e-2);
}

TEST(Bf16Gemm, TableSwapsExactlyTheGemmEntries) {
  const KernelTable& f = CpuKernelTable();
  const KernelTable& h = CpuBf16KernelTable();
  EXPECT_TRUE(h.complete()) << h.missing();
  EXPECT_EQ(h.sgemm, &sgemm_bf16);
  EXPECT_EQ(h.linear_forward, &linear_forward_bf16);
  EXPECT_EQ(h.linear_backward, &linear_backward_bf16);
  EXPECT_EQ(h.linear_forward_rows, &linear_forward_rows_bf16);
  EXPECT_EQ(h.linear_backward_rows, &linear_backward_rows_bf16);
  EXPECT_EQ(h.nn_linear_forward_rows, &nn_linear_forward_rows_bf16);
  EXPECT_EQ(h.nn_linear_backward_rows, &nn_linear_backward_rows_bf16);
  EXPECT_EQ(h.attention_forward, &attention_forward_bf16);
  EXPECT_EQ(h.attention_backward, &attention_backward_bf16);
  EXPECT_EQ(h.gqa_attention_forward, &gqa_attention_forward_bf16);
  EXPECT_EQ(h.gqa_attention_backward, &gqa_attention_backward_bf16);
  // Everything else is the fp32 table's.
  EXPECT_EQ(h.rope_forward, f.rope_forward);
  EXPECT_EQ(h.layernorm_forward, f.layernorm_forward);
  EXPECT_EQ(h.gelu_backward, f.gelu_backward);
  EXPECT_EQ(h.crossentropy_forward, f.crossentropy_forward);
  EXPECT_EQ(h.embedding_backward, f.embedding_backward);
  EXPECT_EQ(h.adamw_update, f.adamw_update);
  EXPECT_EQ(h.chunk_sums_of_squares, f.chunk_sums_of_squares);
}

}  // namespace
}  // namespace strata::kernels
