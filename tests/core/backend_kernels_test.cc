// Every kernel-table entry on every backend present (the GEMM entries, at each dtype, in
// backend_gemm_kernels_test.cc), against the CPU kernel called directly on host vectors: per-element ops give the CPU's bits on every backend; ops with reductions give
// them on the sim device and agree to rounding on CUDA. Each entry is also run twice to show
// that a backend gives the same bits every time (no atomics, fixed reduction orders).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/kernels/adamw.h"
#include "core/kernels/attention.h"
#include "core/kernels/crossentropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/linear.h"
#include "core/kernels/matmul.h"
#include "core/kernels/norms.h"
#include "core/kernels/residual.h"
#include "core/kernels/rmsnorm.h"
#include "core/kernels/rope.h"
#include "core/kernels/swiglu.h"
#include "core/kernels/vocab_parallel.h"
#include "tests/core/backend_kernel_util.h"

namespace strata::kernels::testing {
namespace {

std::vector<int32_t> random_tokens(size_t n, int vocab, uint64_t seed) {
  TestRng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab));
  return t;
}

using BackendKernels = BackendKernelTest;

TEST_P(BackendKernels, LayerNorm) {
  constexpr int N = 19, C = 72;
  const auto inp = random_vector(N * C, 11, -2, 3), w = random_vector(C, 12), b = random_vector(C, 13);
  const auto dout = random_vector(N * C, 14), dinp0 = random_vector(N * C, 15);
  const auto dw0 = random_vector(C, 16), db0 = random_vector(C, 17);
  std::vector<float> out(N * C), mean(N), rstd(N), dinp = dinp0, dw = dw0, db = db0;
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
  layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(),
                     mean.data(), rstd.data(), N, C);
  const float *d_inp = upload(inp), *d_w = upload(w), *d_b = upload(b), *d_dout = upload(dout);
  float *d_out = alloc<float>(N * C), *d_mean = alloc<float>(N), *d_rstd = alloc<float>(N);
  float *d_dinp = upload(dinp0), *d_dw = upload(dw0), *d_db = upload(db0);
  run([&] {
    k().layernorm_forward(d_out, d_mean, d_rstd, d_inp, d_w, d_b, N, C);
    k().layernorm_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, N, C);
  });
  expect_match(download(d_out, out.size()), out, Match::kRounding, "layernorm out");
  expect_match(download(d_mean, N), mean, Match::kRounding, "layernorm mean");
  expect_match(download(d_rstd, N), rstd, Match::kRounding, "layernorm rstd");
  expect_match(download(d_dinp, dinp.size()), dinp, Match::kRounding, "layernorm dinp", 1e-4, 1e-5);
  expect_match(download(d_dw, C), dw, Match::kRounding, "layernorm dweight", 1e-4, 1e-5);
  expect_match(download(d_db, C), db, Match::kRounding, "layernorm dbias");
}

TEST_P(BackendKernels, GeluAndResidualGiveTheCpuBits) {
  constexpr long n = 5000;
  const auto x = random_vector(n, 18, -6, 6), y = random_vector(n, 19), dout = random_vector(n, 20);
  const auto dx0 = random_vector(n, 21), dy0 = random_vector(n, 22);
  std::vector<float> g(n), dg = dx0, r(n), da = dx0, db = dy0;
  gelu_forward(g.data(), x.data(), n);
  gelu_backward(dg.data(), x.data(), dout.data(), n);
  residual_forward(r.data(), x.data(), y.data(), n);
  residual_backward(da.data(), db.data(), dout.data(), n);
  const float *d_x = upload(x), *d_y = upload(y), *d_dout = upload(dout);
  float *d_g = alloc<float>(n), *d_dg = upload(dx0), *d_r = alloc<float>(n);
  float *d_da = upload(dx0), *d_db = upload(dy0);
  run([&] {
    k().gelu_forward(d_g, d_x, n);
    k().gelu_backward(d_dg, d_x, d_dout, n);
    k().residual_forward(d_r, d_x, d_y, n);
    k().residual_backward(d_da, d_db, d_dout, n);
  });
  expect_match(download(d_g, n), g, Match::kBits, "gelu");
  expect_match(download(d_dg, n), dg, Match::kBits, "gelu backward");
  expect_match(download(d_r, n), r, Match::kBits, "residual");
  expect_match(download(d_da, n), da, Match::kBits, "residual da");
  expect_match(download(d_db, n), db, Match::kBits, "residual db");
}

// The LLaMA family's ops (issue 33): RoPE and SwiGLU are per element (the CPU's bits on every
// backend), RMSNorm's rows and grouped-query attention are reductions.
TEST_P(BackendKernels, LlamaOps) {
  constexpr int B = 2, T = 9, C = 48, NH = 6, NKV = 2, hs = C / NH, ld = C + 2 * NKV * hs;
  constexpr int N = B * T, F = 40;
  const auto x = random_vector(N * C, 30, -2, 2), w = random_vector(C, 31);
  const auto dy = random_vector(N * C, 32), dx0 = random_vector(N * C, 33), dw0 = random_vector(C, 34);
  std::vector<float> y(N * C), rstd(N), dx = dx0, dw = dw0;
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
  std::vector<float> cos(T * hs / 2), sin(cos.size());
  rope_table(cos.data(), sin.data(), T, hs, 10000.0);
  const auto qkv0 = random_vector(size_t(N) * ld, 35), dr0 = random_vector(qkv0.size(), 36);
  std::vector<float> qkv = qkv0, dr = dr0;
  rope_forward(qkv.data(), cos.data(), sin.data(), B, T, ld, NH + NKV, hs);
  rope_backward(dr.data(), cos.data(), sin.data(), B, T, ld, NH + NKV, hs);
  const auto gu = random_vector(size_t(N) * 2 * F, 37, -5, 5), dm = random_vector(N * F, 38);
  const auto dgu0 = random_vector(gu.size(), 39);
  std::vector<float> m(N * F), dgu = dgu0;
  swiglu_forward(m.data(), gu.data(), N, F);
  swiglu_backward(dgu.data(), dm.data(), gu.data(), N, F);
  const auto dout = random_vector(N * C, 40);
  std::vector<float> out(N * C), att(size_t(B) * NH * T * T), datt(att.size()),
      dqkv(qkv0.size(), 0.0f);
  gqa_attention_forward(out.data(), att.data(), qkv0.data(), B, T, C, NH, NKV);
  gqa_attention_backward(dqkv.data(), datt.data(), dout.data(), qkv0.data(), att.data(), B, T, C,
                         NH, NKV);

  const float *d_x = upload(x), *d_w = upload(w), *d_dy = upload(dy), *d_cos = upload(cos),
              *d_sin = upload(sin), *d_gu = upload(gu), *d_dm = upload(dm), *d_dout = upload(dout),
              *d_qkv0 = upload(qkv0);
  float *d_y = alloc<float>(N * C), *d_rstd = alloc<float>(N), *d_dx = upload(dx0),
        *d_dw = upload(dw0), *d_qkv = upload(qkv0), *d_dr = upload(dr0), *d_m = alloc<float>(N * F),
        *d_dgu = upload(dgu0), *d_out = alloc<float>(N * C), *d_att = alloc<float>(att.size()),
        *d_datt = alloc<float>(att.size()), *d_dqkv = upload(std::vector<float>(qkv0.size(), 0.0f));
  run([&] {
    k().rmsnorm_forward(d_y, d_rstd, d_x, d_w, N, C, 1e-5f);
    k().rmsnorm_backward(d_dx, d_dw, d_dy, d_x, d_w, d_rstd, N, C);
    k().rope_forward(d_qkv, d_cos, d_sin, B, T, ld, NH + NKV, hs);
    k().rope_backward(d_dr, d_cos, d_sin, B, T, ld, NH + NKV, hs);
    k().swiglu_forward(d_m, d_gu, N, F);
    k().swiglu_backward(d_dgu, d_dm, d_gu, N, F);
    k().gqa_attention_forward(d_out, d_att, d_qkv0, B, T, C, NH, NKV);
    k().gqa_attention_backward(d_dqkv, d_datt, d_dout, d_qkv0, d_att, B, T, C, NH, NKV);
  });
  expect_match(download(d_y, y.size()), y, Match::kRounding, "rmsnorm out");
  expect_match(download(d_dx, dx.size()), dx, Match::kRounding, "rmsnorm dinp", 1e-4, 1e-5);
  expect_match(download(d_dw, C), dw, Match::kRounding, "rmsnorm dweight", 1e-4, 1e-5);
  expect_match(download(d_qkv, qkv.size()), qkv, Match::kBits, "rope forward");
  expect_match(download(d_dr, dr.size()), dr, Match::kBits, "rope backward");
  expect_match(download(d_m, m.size()), m, Match::kBits, "swiglu out");
  expect_match(download(d_dgu, dgu.size()), dgu, Match::kBits, "swiglu dgate_up");
  expect_match(download(d_out, out.size()), out, Match::kRounding, "gqa out", 1e-4, 1e-6);
  expect_match(download(d_dqkv, dqkv.size()), dqkv, Match::kRounding, "gqa dqkv", 1e-3, 1e-5);
}

TEST_P(BackendKernels, Embedding) {
  constexpr int B = 3, T = 17, C = 24, V = 11;  // few tokens: many repeats in the scatter-add
  const auto tokens = random_tokens(size_t(B) * T, V, 26);
  const auto wte = random_vector(size_t(V) * C, 27), wpe = random_vector(size_t(T) * C, 28);
  const auto dout = random_vector(size_t(B) * T * C, 29);
  const auto dwte0 = random_vector(wte.size(), 30), dwpe0 = random_vector(wpe.size(), 31);
  std::vector<float> out(dout.size()), dwte = dwte0, dwpe = dwpe0;
  embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  // The slice [2, 9) of the vocabulary, as a sharded embedding gradient is built.
  std::vector<float> dslice(size_t(7) * C, 0.0f);
  embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, 0, V);
  embedding_backward(dslice.data(), nullptr, dout.data(), tokens.data(), B, T, C, 2, 9);
  const int32_t* d_tok = upload(tokens);
  const float *d_wte = upload(wte), *d_wpe = upload(wpe), *d_dout = upload(dout);
  float *d_out = alloc<float>(out.size()), *d_dwte = upload(dwte0), *d_dwpe = upload(dwpe0);
  float* d_slice = upload(std::vector<float>(dslice.size(), 0.0f));
  run([&] {
    k().embedding_forward(d_out, d_tok, d_wte, d_wpe, B, T, C);
    k().embedding_backward(d_dwte, d_dwpe, d_dout, d_tok, B, T, C, 0, V);
    k().embedding_backward(d_slice, nullptr, d_dout, d_tok, B, T, C, 2, 9);
  });
  expect_match(download(d_out, out.size()), out, Match::kBits, "embedding out");
  expect_match(download(d_dwte, dwte.size()), dwte, Match::kRounding, "embedding dwte");
  expect_match(download(d_dwpe, dwpe.size()), dwpe, Match::kRounding, "embedding dwpe");
  expect_match(download(d_slice, dslice.size()), dslice, Match::kRounding, "dwte slice [2, 9)");
}

TEST_P(BackendKernels, CrossEntropy) {
  constexpr int N = 13, V = 300;
  const auto logits = random_vector(size_t(N) * V, 32, -4, 4);
  const auto targets = random_tokens(N, V, 33);
  const auto dlogits0 = random_vector(logits.size(), 34);
  std::vector<float> probs(logits.size()), dlogits = dlogits0;
  const float loss = crossentropy_forward(probs.data(), logits.data(), targets.data(), N, V);
  crossentropy_backward(dlogits.data(), probs.data(), targets.data(), 1.0f / N, N, V);
  const float* d_logits = upload(logits);
  const int32_t* d_targets = upload(targets);
  float *d_probs = alloc<float>(probs.size()), *d_dlogits = upload(dlogits0);
  float got_loss = NAN;
  run([&] { got_loss = k().crossentropy_forward(d_probs, d_logits, d_targets, N, V); });
  const auto got_probs = download(d_probs, probs.size());
  expect_match(got_probs, probs, Match::kRounding, "crossentropy probs");
  expect_match({got_loss}, {loss}, Match::kRounding, "crossentropy loss");
  // The backward from the CPU's probabilities: per element, so the CPU's bits on every backend.
  const float* d_cpu_probs = upload(probs);
  run([&] { k().crossentropy_backward(d_dlogits, d_cpu_probs, d_targets, 1.0f / N, N, V); });
  expect_match(download(d_dlogits, dlogits.size()), dlogits, Match::kBits, "crossentropy dlogits");
}

TEST_P(BackendKernels, VocabParallelCrossEntropy) {
  // One rank's slice: ids [vocab_begin, vocab_begin + V), the last 5 columns padding.
  constexpr int N = 9, V = 64, valid = 59, vocab_begin = 128, B = 3, T = 3, C = 8, tp = 2;
  const auto logits = random_vector(size_t(N) * V, 35, -3, 3);
  auto targets = random_tokens(N, 200, 36);
  targets[0] = vocab_begin + 3;  // at least one target inside the slice
  const auto rank_max = random_vector(size_t(tp) * N, 37, -1, 1);
  const auto wte_rows = random_vector(size_t(V) * C, 38);
  std::vector<float> emb(size_t(B) * T * C), row_max(N), probs(logits.size()), sums(2 * N);
  std::vector<float> local_max(N), dlogits(logits.size(), 0.5f);
  vocab_parallel_embedding_forward(emb.data(), targets.data(), wte_rows.data(), B, T, C,
                                   vocab_begin, vocab_begin + valid);
  vocab_parallel_logit_max(local_max.data(), logits.data(), N, V, valid);
  vocab_parallel_softmax_partial(probs.data(), row_max.data(), sums.data(), rank_max.data(), tp,
                                 logits.data(), targets.data(), N, V, valid, vocab_begin);
  const float loss =
      vocab_parallel_crossentropy_forward(probs.data(), row_max.data(), sums.data(), N, V);
  vocab_parallel_crossentropy_backward(dlogits.data(), probs.data(), targets.data(), 0.25f, N, V,
                                       vocab_begin);

  const int32_t* d_targets = upload(targets);
  const float *d_logits = upload(logits), *d_rank_max = upload(rank_max), *d_wte = upload(wte_rows);
  float *d_emb = alloc<float>(emb.size()), *d_local = alloc<float>(N), *d_row_max = alloc<float>(N);
  float *d_probs = alloc<float>(probs.size()), *d_sums = alloc<float>(2 * N);
  float* d_dlogits = upload(std::vector<float>(logits.size(), 0.5f));
  float got_loss = NAN;
  run([&] {
    k().vocab_parallel_embedding_forward(d_emb, d_targets, d_wte, B, T, C, vocab_begin,
                                         vocab_begin + valid);
    k().vocab_parallel_logit_max(d_local, d_logits, N, V, valid);
    k().vocab_parallel_softmax_partial(d_probs, d_row_max, d_sums, d_rank_max, tp, d_logits,
                                       d_targets, N, V, valid, vocab_begin);
  });
  expect_match(download(d_emb, emb.size()), emb, Match::kBits, "vocab-parallel embedding");
  expect_match(download(d_local, N), local_max, Match::kBits, "logit max");
  expect_match(download(d_row_max, N), row_max, Match::kBits, "rank-order max");
  expect_match(download(d_sums, 2 * N), sums, Match::kRounding, "partial sums");
  // The rest from the CPU's partial results, so each step is compared on its own.
  std::vector<float> probs_pre(logits.size()), max_pre(N), sums_pre(2 * N);
  vocab_parallel_softmax_partial(probs_pre.data(), max_pre.data(), sums_pre.data(),
                                 rank_max.data(), tp, logits.data(), targets.data(), N, V, valid,
                                 vocab_begin);
  float* d_cpu_probs_pre = upload(probs_pre);
  const float *d_max_pre = upload(max_pre), *d_sums_pre = upload(sums_pre);
  run([&] {
    got_loss = k().vocab_parallel_crossentropy_forward(d_cpu_probs_pre, d_max_pre, d_sums_pre, N, V);
  });
  expect_match(download(d_cpu_probs_pre, probs.size()), probs, Match::kBits, "normalised probs");
  expect_match({got_loss}, {loss}, Match::kRounding, "vocab-parallel loss");
  const float* d_probs_final = upload(probs);
  run([&] {
    k().vocab_parallel_crossentropy_backward(d_dlogits, d_probs_final, d_targets, 0.25f, N, V,
                                             vocab_begin);
  });
  expect_match(download(d_dlogits, dlogits.size()), dlogits, Match::kBits, "vocab-parallel dlogits");
}

TEST_P(BackendKernels, AdamWGivesTheCpuBits) {
  constexpr long n = 4099;
  const auto p0 = random_vector(n, 39), g = random_vector(n, 40), m0 = random_vector(n, 41);
  const auto v0 = random_vector(n, 42, 0, 1);
  std::vector<float> p = p0, m = m0, v = v0;
  AdamWParams hp;
  hp.lr = 1e-3f;
  hp.weight_decay = 0.1f;
  hp.step = 7;
  adamw_update(p.data(), g.data(), m.data(), v.data(), n, hp, 0.5f);
  float *d_p = upload(p0), *d_m = upload(m0), *d_v = upload(v0);
  const float* d_g = upload(g);
  run([&] { k().adamw_update(d_p, d_g, d_m, d_v, n, hp, 0.5f); });
  expect_match(download(d_p, n), p, Match::kBits, "adamw param");
  expect_match(download(d_m, n), m, Match::kBits, "adamw m");
  expect_match(download(d_v, n), v, Match::kBits, "adamw v");
}

// The gradient norm's partials follow the CPU's lane order on every backend: a clipping norm is
// the same number on the sim device and on a GPU. zero zeroes exactly its range.
TEST_P(BackendKernels, ZeroAndNormPartialsGiveTheCpuBits) {
  constexpr long n = 5 * kNormChunkFloats + 333;  // a partial last chunk
  const auto x = random_vector(n, 48, -3, 3);
  std::vector<double> want((n + kNormChunkFloats - 1) / kNormChunkFloats);
  chunk_sums_of_squares(x.data(), n, want.data());
  const float* d_x = upload(x);
  float* d_z = upload(x);
  std::vector<double> got(want.size(), -1.0);
  run([&] {
    k().chunk_sums_of_squares(d_x, n, got.data());
    k().zero(d_z + 7, n - 9);
  });
  const auto z = download(d_z, n);  // synchronizes: `got` is written by now
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(double)), 0)
      << GetParam() << ": norm partials differ from the CPU's";
  for (long i = 0; i < n; ++i) {
    const float expected = i < 7 || i >= n - 2 ? x[i] : 0.0f;
    ASSERT_EQ(z[i], expected) << "element " << i;
  }
}

// copy moves device memory in the launch's order, after the zero before it; finish returns
// inside a launch (on CUDA it waits for the launch's stream).
TEST_P(BackendKernels, CopyAndFinish) {
  const auto x = random_vector(1000, 49);
  const float* d_x = upload(x);
  float* d_y = alloc<float>(x.size());
  run([&] {
    k().zero(d_y, long(x.size()));
    k().copy(d_y + 10, d_x + 10, long(x.size()) - 20);
    k().finish();
  });
  const auto y = download(d_y, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[i], i < 10 || i >= x.size() - 10 ? 0.0f : x[i]) << "element " << i;
  }
}

// The ops with reductions, twice on the same inputs: the same bits both times.
TEST_P(BackendKernels, ReductionsGiveTheSameBitsEveryRun) {
  constexpr int B = 2, T = 64, C = 64, NH = 4, V = 37, N = B * T;
  const auto x = random_vector(size_t(N) * C, 43), w = random_vector(C, 44);
  const auto qkv = random_vector(size_t(N) * 3 * C, 45), dout = random_vector(size_t(N) * C, 46);
  const auto tokens = random_tokens(N, V, 47);
  const float *d_x = upload(x), *d_w = upload(w), *d_qkv = upload(qkv), *d_dout = upload(dout);
  const int32_t* d_tok = upload(tokens);
  std::vector<std::vector<float>> runs;
  for (int r = 0; r < 2; ++r) {
    float *ln = alloc<float>(x.size()), *mean = alloc<float>(N), *rstd = alloc<float>(N);
    float *dx = upload(std::vector<float>(x.size())), *dw = upload(std::vector<float>(C)),
          *db = upload(std::vector<float>(C));
    float *out = alloc<float>(x.size()), *att = alloc<float>(size_t(B) * NH * T * T),
          *datt = alloc<float>(size_t(B) * NH * T * T),
          *dqkv = upload(std::vector<float>(qkv.size()));
    float* dwte = upload(std::vector<float>(size_t(V) * C));
    run([&] {
      k().layernorm_forward(ln, mean, rstd, d_x, d_w, d_w, N, C);
      k().layernorm_backward(dx, dw, db, d_dout, d_x, d_w, mean, rstd, N, C);
      k().attention_forward(out, att, d_qkv, B, T, C, NH);
      k().attention_backward(dqkv, datt, d_dout, d_qkv, att, B, T, C, NH);
      k().embedding_backward(dwte, nullptr, d_dout, d_tok, B, T, C, 0, V);
    });
    std::vector<float> all;
    for (auto part : {download(dx, x.size()), download(dw, C), download(db, C),
                      download(dqkv, qkv.size()), download(dwte, size_t(V) * C)}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    runs.push_back(std::move(all));
  }
  EXPECT_TRUE(bitwise_equal(runs[0], runs[1])) << GetParam() << ": two runs differ";
}

INSTANTIATE_TEST_SUITE_P(EachBackend, BackendKernels, ::testing::Values("sim", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::kernels::testing
