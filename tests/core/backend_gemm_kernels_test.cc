// The GEMM entries of the kernel table (sgemm, both linears and their row slices, attention) on
// every backend present, at each compute dtype, against the CPU's table of that dtype called on
// host vectors: the sim device gives its bits, CUDA agrees to rounding (backend_kernels_test.cc
// covers the other entries; backend_kernel_util.h runs them).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/device/kernel_table.h"
#include "core/kernels/linear.h"
#include "tests/core/backend_kernel_util.h"

namespace strata::kernels::testing {
namespace {

// The GEMM entries run at each compute dtype (Note [bf16 compute] in core/kernels/dtype.h),
// against the CPU's table of that dtype. With bf16, sums of products of the same bf16 operands
// agree to fp32 rounding (a looser 1e-4: more terms cancel); attention's second GEMMs round
// operands that are themselves computed, where a last-bit difference can move a bf16 rounding by
// one step: its tolerance is bf16's.
constexpr Dtype kDtypes[] = {Dtype::kFp32, Dtype::kBf16};
const KernelTable& CpuTable(Dtype d) {
  return d == Dtype::kBf16 ? CpuBf16KernelTable() : CpuKernelTable();
}
std::string Named(const std::string& what, Dtype d) { return what + " (" + DtypeName(d) + ")"; }
double GemmTolerance(Dtype d) { return d == Dtype::kBf16 ? 1e-4 : 2e-5; }

class BackendGemmKernels : public BackendKernelTest {
 protected:
  void LinearCase(Dtype d);
  void NnLinearCase(Dtype d);
  void AttentionCase(Dtype d);
};

void BackendGemmKernels::LinearCase(Dtype d) {
  constexpr int N = 24, C = 96, OC = 40;
  const auto inp = random_vector(N * C, 4), w = random_vector(C * OC, 5), bias = random_vector(OC, 6);
  const auto dout = random_vector(N * OC, 7), dinp0 = random_vector(N * C, 8);
  const auto dw0 = random_vector(C * OC, 9), db0 = random_vector(OC, 10);
  std::vector<float> out(N * OC), dinp = dinp0, dw = dw0, db = db0;
  const KernelTable& cpu = CpuTable(d);
  cpu.linear_forward(out.data(), inp.data(), w.data(), bias.data(), N, C, OC);
  cpu.linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C,
                      OC);
  const float *d_inp = upload(inp), *d_w = upload(w), *d_bias = upload(bias), *d_dout = upload(dout);
  float *d_out = alloc<float>(N * OC), *d_dinp = upload(dinp0), *d_dw = upload(dw0),
        *d_db = upload(db0);
  run([&] {
    k(d).linear_forward(d_out, d_inp, d_w, d_bias, N, C, OC);
    k(d).linear_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
  });
  const double rtol = GemmTolerance(d);
  const auto got_out = download(d_out, out.size());
  expect_match(got_out, out, Match::kRounding, Named("linear out", d), rtol, 1e-5);
  const auto got_dinp = download(d_dinp, dinp.size()), got_dw = download(d_dw, dw.size());
  expect_match(got_dinp, dinp, Match::kRounding, Named("linear dinp", d), rtol, 1e-5);
  expect_match(got_dw, dw, Match::kRounding, Named("linear dweight", d), rtol, 1e-5);
  expect_match(download(d_db, db.size()), db, Match::kRounding, Named("linear dbias", d));

  // Two row slices on a chunk boundary give this backend's whole-linear bits (--split-ops).
  const int mid = LinearChunkBegin(C, 2);
  float *s_out = alloc<float>(N * OC), *s_dinp = upload(dinp0), *s_dw = upload(dw0);
  run([&] {
    k(d).linear_forward_rows(s_out, d_inp, d_w, d_bias, N, C, OC, 0, mid);
    k(d).linear_forward_rows(s_out, d_inp, d_w + size_t(mid) * OC, d_bias, N, C, OC, mid, C);
    k(d).linear_backward_rows(s_dinp, s_dw, nullptr, d_dout, d_inp, d_w, N, C, OC, 0, mid);
    k(d).linear_backward_rows(s_dinp, s_dw + size_t(mid) * OC, nullptr, d_dout, d_inp,
                              d_w + size_t(mid) * OC, N, C, OC, mid, C);
  });
  const std::string what = std::string(" row slices (") + DtypeName(d) + ")";
  EXPECT_TRUE(bitwise_equal(download(s_out, out.size()), got_out)) << "forward" << what;
  EXPECT_TRUE(bitwise_equal(download(s_dinp, dinp.size()), got_dinp)) << "dinp" << what;
  EXPECT_TRUE(bitwise_equal(download(s_dw, dw.size()), got_dw)) << "dweight" << what;
}

// The nn.Linear layout (out, in) by row ranges: the whole range against the CPU's, and two
// slices on a chunk boundary give this backend's whole bits (Note [nn.Linear in row chunks]).
void BackendGemmKernels::NnLinearCase(Dtype d) {
  constexpr int N = 24, in = 40, out = 96, ldy = 112;
  const auto x = random_vector(N * in, 31), w = random_vector(out * in, 32);
  const auto dy = random_vector(N * ldy, 33), dw0 = random_vector(out * in, 34);
  std::vector<float> y(N * ldy, 0.0f), dx(N * in), dw = dw0;
  const KernelTable& cpu = CpuTable(d);
  cpu.nn_linear_forward_rows(y.data(), ldy, x.data(), w.data(), N, in, out, 0, out);
  cpu.nn_linear_backward_rows(dx.data(), true, dw.data(), dy.data(), ldy, x.data(), w.data(), N, in,
                              out, 0, out);
  const float *d_x = upload(x), *d_w = upload(w), *d_dy = upload(dy);
  float *d_y = upload(std::vector<float>(N * ldy, 0.0f)), *d_dx = alloc<float>(N * in),
        *d_dw = upload(dw0);
  run([&] {
    k(d).nn_linear_forward_rows(d_y, ldy, d_x, d_w, N, in, out, 0, out);
    k(d).nn_linear_backward_rows(d_dx, true, d_dw, d_dy, ldy, d_x, d_w, N, in, out, 0, out);
  });
  const double rtol = GemmTolerance(d);
  const auto got_y = download(d_y, y.size()), got_dx = download(d_dx, dx.size()),
             got_dw = download(d_dw, dw.size());
  expect_match(got_y, y, Match::kRounding, Named("nn_linear y", d), rtol, 1e-5);
  expect_match(got_dx, dx, Match::kRounding, Named("nn_linear dx", d), rtol, 1e-5);
  expect_match(got_dw, dw, Match::kRounding, Named("nn_linear dw", d), rtol, 1e-5);

  const int mid = LinearChunkBegin(out, 2);
  float *s_y = upload(std::vector<float>(N * ldy, 0.0f)), *s_dx = alloc<float>(N * in),
        *s_dw = upload(dw0);
  const float* d_w_mid = d_w + size_t(mid) * in;
  run([&] {
    k(d).nn_linear_forward_rows(s_y, ldy, d_x, d_w, N, in, out, 0, mid);
    k(d).nn_linear_forward_rows(s_y, ldy, d_x, d_w_mid, N, in, out, mid, out);
    k(d).nn_linear_backward_rows(s_dx, true, s_dw, d_dy, ldy, d_x, d_w, N, in, out, 0, mid);
    k(d).nn_linear_backward_rows(s_dx, false, s_dw + size_t(mid) * in, d_dy, ldy, d_x, d_w_mid, N,
                                 in, out, mid, out);
  });
  const std::string what = std::string(" nn_linear row slices (") + DtypeName(d) + ")";
  EXPECT_TRUE(bitwise_equal(download(s_y, y.size()), got_y)) << "y" << what;
  EXPECT_TRUE(bitwise_equal(download(s_dx, dx.size()), got_dx)) << "dx" << what;
  EXPECT_TRUE(bitwise_equal(download(s_dw, dw.size()), got_dw)) << "dw" << what;
}

void BackendGemmKernels::AttentionCase(Dtype d) {
  constexpr int B = 2, T = 33, C = 48, NH = 4;
  const auto qkv = random_vector(size_t(B) * T * 3 * C, 23), dout = random_vector(size_t(B) * T * C, 24);
  const auto dqkv0 = random_vector(qkv.size(), 25);
  const size_t att_n = size_t(B) * NH * T * T;
  std::vector<float> out(size_t(B) * T * C), att(att_n), datt(att_n), dqkv = dqkv0;
  const KernelTable& cpu = CpuTable(d);
  cpu.attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  cpu.attention_backward(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                         NH);
  const float *d_qkv = upload(qkv), *d_dout = upload(dout);
  float *d_out = alloc<float>(out.size()), *d_att = alloc<float>(att_n),
        *d_datt = alloc<float>(att_n), *d_dqkv = upload(dqkv0);
  run([&] {
    k(d).attention_forward(d_out, d_att, d_qkv, B, T, C, NH);
    k(d).attention_backward(d_dqkv, d_datt, d_dout, d_qkv, d_att, B, T, C, NH);
  });
  const auto got_att = download(d_att, att_n);
  const bool bf16 = d == Dtype::kBf16;
  expect_match(got_att, att, Match::kRounding, Named("attention probabilities", d),
               bf16 ? 1e-4 : 2e-5, bf16 ? 1e-6 : 2e-6);
  for (int bh = 0; bh < B * NH; ++bh) {  // exact zeros above the diagonal on every backend
    for (int i = 0; i < T; ++i) {
      for (int j = i + 1; j < T; ++j) ASSERT_EQ(got_att[(size_t(bh) * T + i) * T + j], 0.0f);
    }
  }
  expect_match(download(d_out, out.size()), out, Match::kRounding, Named("attention out", d),
               bf16 ? 1e-2 : 2e-5, bf16 ? 1e-3 : 2e-6);
  expect_match(download(d_dqkv, dqkv.size()), dqkv, Match::kRounding,
               Named("attention dqkv", d), bf16 ? 1e-2 : 1e-4, bf16 ? 1e-3 : 1e-5);
}

TEST_P(BackendGemmKernels, Sgemm) {
  constexpr int M = 37, N = 29, K = 41, ld = 48;
  for (Dtype d : kDtypes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        const auto a = random_vector(size_t(ld) * ld, 1), b = random_vector(size_t(ld) * ld, 2);
        const auto c0 = random_vector(size_t(M) * ld, 3);
        std::vector<float> want = c0;
        CpuTable(d).sgemm(ta, tb, M, N, K, 0.7f, a.data(), ld, b.data(), ld, 0.3f, want.data(),
                          ld);
        const float *da = upload(a), *db = upload(b);
        float* dc = upload(c0);
        run([&] { k(d).sgemm(ta, tb, M, N, K, 0.7f, da, ld, db, ld, 0.3f, dc, ld); });
        expect_match(download(dc, c0.size()), want, Match::kRounding,
                     Named("sgemm trans " + std::to_string(ta) + std::to_string(tb), d),
                     GemmTolerance(d), 1e-5);
      }
    }
  }
}

TEST_P(BackendGemmKernels, LinearForwardBackwardAndRowSlices) {
  for (Dtype d : kDtypes) LinearCase(d);
}

TEST_P(BackendGemmKernels, NnLinearRowRanges) {
  for (Dtype d : kDtypes) NnLinearCase(d);
}

TEST_P(BackendGemmKernels, Attention) {
  for (Dtype d : kDtypes) AttentionCase(d);
}

INSTANTIATE_TEST_SUITE_P(EachBackend, BackendGemmKernels, ::testing::Values("sim", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::kernels::testing
