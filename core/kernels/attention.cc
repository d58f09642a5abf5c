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

// attention_forward at a compute dtype (the GEMM operands rounded to bf16 or not).
void Forward(Dtype dtype, float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  STRATA_CHECK(NH > 0 && C % NH == 0) << "attention_forward: C = " << C << ", NH = " << NH;
  const int hs = C / NH;
  const int ld = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  detail::for_each_chunk(static_cast<long>(B) * NH, 1, [&](long bh, long) {
    const long b = bh / NH;
    const int h = static_cast<int>(bh % NH);
    const float* q = qkv + b * T * ld + h * hs;
    const float* k = q + C;
    const float* v = q + 2 * C;
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

// attention_backward at a compute dtype.
void Backward(Dtype dtype, float* dqkv, float* datt, const float* dout, const float* qkv,
              const float* att, int B, int T, int C, int NH) {
  STRATA_CHECK(NH > 0 && C % NH == 0) << "attention_backward: C = " << C << ", NH = " << NH;
  const int hs = C / NH;
  const int ld = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  detail::for_each_chunk(static_cast<long>(B) * NH, 1, [&](long bh, long) {
    const long b = bh / NH;
    const int h = static_cast<int>(bh % NH);
    const long head = b * T * ld + h * hs;
    const float* q = qkv + head;
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* dq = dqkv + head;
    float* dk = dq + C;
    float* dv = dq + 2 * C;
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
  });
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  Forward(Dtype::kFp32, out, att, qkv, B, T, C, NH);
}

void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH) {
  Backward(Dtype::kFp32, dqkv, datt, dout, qkv, att, B, T, C, NH);
}

void attention_forward_bf16(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  Forward(Dtype::kBf16, out, att, qkv, B, T, C, NH);
}

void attention_backward_bf16(float* dqkv, float* datt, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH) {
  Backward(Dtype::kBf16, dqkv, datt, dout, qkv, att, B, T, C, NH);
}

}  // namespace strata::kernels
