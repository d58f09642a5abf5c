// The --dtype bf16 GEMM entries (Note [bf16 compute] in core/kernels/dtype.h) on every backend
// present, against the CPU's bf16 kernels on host vectors: the sim device gives their bits; CUDA
// (bf16 tensor cores, fp32 accumulation) agrees to the rounding of its fp32 sums. Attention's
// second GEMMs round operands (att, d(scores)) that are themselves computed, so a last-bit
// difference there can move a bf16 rounding by one step: its tolerance is bf16's, not fp32's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/kernels/attention.h"
#include "core/kernels/linear.h"
#include "core/kernels/matmul.h"
#include "tests/core/backend_kernel_util.h"

namespace strata::kernels::testing {
namespace {

using BackendBf16Kernels = BackendKernelTest;
constexpr Dtype kBf16 = Dtype::kBf16;

TEST_P(BackendBf16Kernels, Sgemm) {
  constexpr int M = 37, N = 29, K = 41, ld = 48;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const auto a = random_vector(size_t(ld) * ld, 1), b = random_vector(size_t(ld) * ld, 2);
      const auto c0 = random_vector(size_t(M) * ld, 3);
      std::vector<float> want = c0;
      sgemm_bf16(ta, tb, M, N, K, 0.7f, a.data(), ld, b.data(), ld, 0.3f, want.data(), ld);
      const float *da = upload(a), *db = upload(b);
      float* dc = upload(c0);
      run([&] { k(kBf16).sgemm(ta, tb, M, N, K, 0.7f, da, ld, db, ld, 0.3f, dc, ld); });
      expect_match(download(dc, c0.size()), want, Match::kRounding,
                   "sgemm_bf16 trans " + std::to_string(ta) + std::to_string(tb), 1e-4, 1e-5);
    }
  }
}

TEST_P(BackendBf16Kernels, Linear) {
  constexpr int N = 24, C = 96, OC = 40;
  const auto inp = random_vector(N * C, 4), w = random_vector(C * OC, 5), bias = random_vector(OC, 6);
  const auto dout = random_vector(N * OC, 7), dinp0 = random_vector(N * C, 8);
  const auto dw0 = random_vector(C * OC, 9), db0 = random_vector(OC, 10);
  std::vector<float> out(N * OC), dinp = dinp0, dw = dw0, db = db0;
  linear_forward_bf16(out.data(), inp.data(), w.data(), bias.data(), N, C, OC);
  linear_backward_bf16(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C,
                       OC);
  const float *d_inp = upload(inp), *d_w = upload(w), *d_bias = upload(bias), *d_dout = upload(dout);
  float *d_out = alloc<float>(out.size()), *d_dinp = upload(dinp0), *d_dw = upload(dw0),
        *d_db = upload(db0);
  run([&] {
    k(kBf16).linear_forward(d_out, d_inp, d_w, d_bias, N, C, OC);
    k(kBf16).linear_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
  });
  expect_match(download(d_out, out.size()), out, Match::kRounding, "linear_forward_bf16", 1e-4,
               1e-5);
  expect_match(download(d_dinp, dinp.size()), dinp, Match::kRounding, "dinp", 1e-4, 1e-5);
  expect_match(download(d_dw, dw.size()), dw, Match::kRounding, "dweight", 1e-4, 1e-5);
  expect_match(download(d_db, db.size()), db, Match::kRounding, "dbias");
}

TEST_P(BackendBf16Kernels, Attention) {
  constexpr int B = 2, T = 33, C = 48, NH = 4;
  const auto qkv = random_vector(size_t(B) * T * 3 * C, 23), dout = random_vector(size_t(B) * T * C, 24);
  const auto dqkv0 = random_vector(qkv.size(), 25);
  const size_t att_n = size_t(B) * NH * T * T;
  std::vector<float> out(size_t(B) * T * C), att(att_n), datt(att_n), dqkv = dqkv0;
  attention_forward_bf16(out.data(), att.data(), qkv.data(), B, T, C, NH);
  attention_backward_bf16(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                          NH);
  const float *d_qkv = upload(qkv), *d_dout = upload(dout);
  float *d_out = alloc<float>(out.size()), *d_att = alloc<float>(att_n),
        *d_datt = alloc<float>(att_n), *d_dqkv = upload(dqkv0);
  run([&] {
    k(kBf16).attention_forward(d_out, d_att, d_qkv, B, T, C, NH);
    k(kBf16).attention_backward(d_dqkv, d_datt, d_dout, d_qkv, d_att, B, T, C, NH);
  });
  expect_match(download(d_att, att_n), att, Match::kRounding, "attention_bf16 att", 1e-4, 1e-6);
  expect_match(download(d_out, out.size()), out, Match::kRounding, "attention_bf16 out", 1e-2,
               1e-3);
  expect_match(download(d_dqkv, dqkv.size()), dqkv, Match::kRounding, "attention_bf16 dqkv", 1e-2,
               1e-3);
}

INSTANTIATE_TEST_SUITE_P(EachBackend, BackendBf16Kernels, ::testing::Values("sim", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace strata::kernels::testing
