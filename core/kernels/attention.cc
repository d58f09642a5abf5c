#include "core/kernels/attention.h"

#include <algorithm>
#include <cmath>

#include "core/kernels/gemm_tiles.h"
#include "core/kernels/partition.h"
#include "core/kernels/softmax_math.h"
#include "core/util/check.h"

namespace strata::kernels {
namespace {

// Note [Attention threading]
// The GEMMs of one (batch, head) are small (T x T x hs: 256 x 256 x 64 for GPT-2 small), too
// small for OpenBLAS to thread well, and B * NH of them are independent. So each (b, h) pair
// is one TBB task that runs all of its GEMMs as single-threaded OpenBLAS calls
// (detail::sgemm_one_thread) and its softmax in between, while the data of that head is hot in
// the core's cache. Tasks write disjoint memory (their head's columns of out / dqkv, their
// own T x T slice of att / datt), the work of a task does not depend on which thread runs it,
// and OpenBLAS never starts threads of its own (Note [Deterministic GEMM]): results are
// bit-identical for any thread count, and only TBB's threads compete for the cores.
//
// Causality is exploited by row blocks of kBlock queries: rows [i0, i1) only see keys
// [0, i1), so their scores, softmax and att @ v only touch the first i1 columns, and dk, dv
// are computed by column blocks over the rows that see them. For T = 256 that is 62.5% of
// the full GEMM work. Measured on one core at B=8, T=256, C=384, NH=6 (forward / backward):
// blocks of 64 rows 7.0 / 13.4 ms, of 32 rows the same, of 128 rows 7.8 / 15.1, no blocks
// 9.6 / 18.3.
constexpr int kBlock = 64;

// In-place causal softmax of the scores of row i (already scaled): entries [0, i] become
// probabilities, entries (i, T) become 0.
void softmax_row(float* row, int i, int T) {
  const int n = i + 1;
  const float max = detail::max_lanes(row, n);
  for (int j = 0; j < n; ++j) row[j] = detail::SoftmaxExp(row[j], max);
  const float inv = 1.0f / detail::sum_lanes(row, n);
  for (int j = 0; j < n; ++j) row[j] *= inv;
  std::fill(row + n, row + T, 0.0f);
}

// The packed row of grouped-query attention: [q (NH heads) | k (NKV heads) | v (NKV heads)], each
// head hs columns; query head h reads key/value head h / (NH / NKV).
struct Heads {
  int C, NH, NKV, hs, kvc, ld, group;
  Heads(const char* what, int C_, int NH_, int NKV_) : C(C_), NH(NH_), NKV(NKV_) {
    STRATA_CHECK(NH > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0)
        << what << ": C = " << C << ", NH = " << NH << ", NKV = " << NKV;
    hs = C / NH;
    kvc = NKV * hs;
    ld = C + 2 * kvc;
    group = NH / NKV;
  }
  long q(long b, int T, int h) const { return b * T * ld + static_cast<long>(h) * hs; }
  long k(long b, int T, int h) const { return b * T * ld + C + static_cast<long>(h / group) * hs; }
  long v(long b, int T, int h) const { return k(b, T, h) + kvc; }
};

// attention_forward at a compute dtype (the GEMM operands rounded to bf16 or not).
void Forward(Dtype dtype, float* out, float* att, const float* qkv, int B, int T, int C, int NH,
             int NKV) {
  const Heads H("attention_forward", C, NH, NKV);
  const int hs = H.hs;
  const int ld = H.ld;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  detail::for_each_chunk(static_cast<long>(B) * NH, 1, [&](long bh, long) {
    const long b = bh / NH;
    const int h = static_cast<int>(bh % NH);
    const float* q = qkv + H.q(b, T, h);
    const float* k = qkv + H.k(b, T, h);
    const float* v = qkv + H.v(b, T, h);
    float* a = att + bh * T * T;
    float* o = out + b * T * C + h * hs;
    for (int i0 = 0; i0 < T; i0 += kBlock) {
      const int i1 = std::min(T, i0 + kBlock);
      // scores[i0:i1, 0:i1] = scale * q[i0:i1] @ k[0:i1]^T
      detail::sgemm_one_thread(false, true, i1 - i0, i1, hs, scale, q + static_cast<long>(i0) * ld,
                               ld, k, ld, 0.0f, a + static_cast<long>(i0) * T, T, dtype);
      for (int i = i0; i < i1; ++i) softmax_row(a + static_cast<long>(i) * T, i, T);
      // out[i0:i1] = att[i0:i1, 0:i1] @ v[0:i1]
      detail::sgemm_one_thread(false, false, i1 - i0, hs, i1, 1.0f, a + static_cast<long>(i0) * T,
                               T, v, ld, 0.0f, o + static_cast<long>(i0) * C, C, dtype);
    }
  });
}

// One query head's part of attention_backward: its dq, and its share of its key/value head's
// dk, dv.
void BackwardHead(Dtype dtype, const Heads& H, long b, int h, float* dqkv, float* datt,
                  const float* dout, const float* qkv, const float* att, int T) {
  const int hs = H.hs, ld = H.ld, C = H.C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const long bh = b * H.NH + h;
  const float* q = qkv + H.q(b, T, h);
  const float* k = qkv + H.k(b, T, h);
  const float* v = qkv + H.v(b, T, h);
  float* dq = dqkv + H.q(b, T, h);
  float* dk = dqkv + H.k(b, T, h);
  float* dv = dqkv + H.v(b, T, h);
  const float* a = att + bh * T * T;
  float* da = datt + bh * T * T;  // becomes d(scores) / scale in place
  const float* dy = dout + b * T * C + h * hs;
  for (int i0 = 0; i0 < T; i0 += kBlock) {
    const int i1 = std::min(T, i0 + kBlock);
    // datt[i0:i1, 0:i1] = dout[i0:i1] @ v[0:i1]^T
    detail::sgemm_one_thread(false, true, i1 - i0, i1, hs, 1.0f, dy + static_cast<long>(i0) * C,
                             C, v, ld, 0.0f, da + static_cast<long>(i0) * T, T, dtype);
    // Softmax backward: dpre[j] = att[j] * (datt[j] - sum_k att[k] datt[k]) for j <= i;
    // 0 for i < j < i1, the part above the diagonal that the GEMMs below read (the dk, dv
    // GEMMs of keys [j0, j1) read rows >= j0, whose blocks end at or after j1).
    for (int i = i0; i < i1; ++i) {
      const float* ar = a + static_cast<long>(i) * T;
      float* dr = da + static_cast<long>(i) * T;
      const int n = i + 1;
      const float dot = detail::dot_lanes(ar, dr, n);
      for (int j = 0; j < n; ++j) dr[j] = detail::SoftmaxBackward(ar[j], dr[j], dot);
      std::fill(dr + n, dr + i1, 0.0f);
    }
    // dq[i0:i1] += scale * dpre[i0:i1, 0:i1] @ k[0:i1]
    detail::sgemm_one_thread(false, false, i1 - i0, hs, i1, scale, da + static_cast<long>(i0) * T,
                             T, k, ld, 1.0f, dq + static_cast<long>(i0) * ld, ld, dtype);
  }
  // Keys and values [j0, j1) are seen by queries [j0, T).
  for (int j0 = 0; j0 < T; j0 += kBlock) {
    const int j1 = std::min(T, j0 + kBlock);
    const long rows = T - j0;
    // dk[j0:j1] += scale * dpre[j0:T, j0:j1]^T @ q[j0:T]
    detail::sgemm_one_thread(true, false, j1 - j0, hs, static_cast<int>(rows), scale,
                             da + static_cast<long>(j0) * T + j0, T,
                             q + static_cast<long>(j0) * ld, ld, 1.0f,
                             dk + static_cast<long>(j0) * ld, ld, dtype);
    // dv[j0:j1] += att[j0:T, j0:j1]^T @ dout[j0:T]
    detail::sgemm_one_thread(true, false, j1 - j0, hs, static_cast<int>(rows), 1.0f,
                             a + static_cast<long>(j0) * T + j0, T,
                             dy + static_cast<long>(j0) * C, C, 1.0f,
                             dv + static_cast<long>(j0) * ld, ld, dtype);
  }
}

// attention_backward at a compute dtype. One task per (batch, key/value head): the query heads
// that share a key/value head add into its dk, dv one after another, in head order, so the sums'
// order is fixed; with NKV == NH each task is one head, as before grouped heads existed.
void Backward(Dtype dtype, float* dqkv, float* datt, const float* dout, const float* qkv,
              const float* att, int B, int T, int C, int NH, int NKV) {
  const Heads H("attention_backward", C, NH, NKV);
  detail::for_each_chunk(static_cast<long>(B) * NKV, 1, [&](long bg, long) {
    const long b = bg / NKV;
    const int g = static_cast<int>(bg % NKV);
    for (int h = g * H.group; h < (g + 1) * H.group; ++h) {
      BackwardHead(dtype, H, b, h, dqkv, datt, dout, qkv, att, T);
    }
  });
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  Forward(Dtype::kFp32, out, att, qkv, B, T, C, NH, NH);
}

void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH) {
  Backward(Dtype::kFp32, dqkv, datt, dout, qkv, att, B, T, C, NH, NH);
}

void attention_forward_bf16(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  Forward(Dtype::kBf16, out, att, qkv, B, T, C, NH, NH);
}

void attention_backward_bf16(float* dqkv, float* datt, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH) {
  Backward(Dtype::kBf16, dqkv, datt, dout, qkv, att, B, T, C, NH, NH);
}

void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                           int NKV) {
  Forward(Dtype::kFp32, out, att, qkv, B, T, C, NH, NKV);
}

void gqa_attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                            const float* att, int B, int T, int C, int NH, int NKV) {
  Backward(Dtype::kFp32, dqkv, datt, dout, qkv, att, B, T, C, NH, NKV);
}

void gqa_attention_forward_bf16(float* out, float* att, const float* qkv, int B, int T, int C,
                                int NH, int NKV) {
  Forward(Dtype::kBf16, out, att, qkv, B, T, C, NH, NKV);
}

void gqa_attention_backward_bf16(float* dqkv, float* datt, const float* dout, const float* qkv,
                                 const float* att, int B, int T, int C, int NH, int NKV) {
  Backward(Dtype::kBf16, dqkv, datt, dout, qkv, att, B, T, C, NH, NKV);
}

}  // namespace strata::kernels
