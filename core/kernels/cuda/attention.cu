// Causal multi-head self-attention's CUDA kernels (core/kernels/attention.h): the GEMMs of the
// NH heads of one batch row as one cuBLAS strided-batched call, and the causal softmax (and its
// backward) as one block per row of scores.
//
// Unlike the CPU kernel (Note [Attention threading]), the GEMMs here are full T x T: causality
// is only the exact zeros the softmax writes above the diagonal, which add nothing to att @ v
// and to the backward's products. Simpler, and the cuBLAS calls are few and large.
//
// Layout: qkv (B, T, 3C) rows [q | k | v], head h at columns h*hs of each third, so head h of
// batch row b is a (T, hs) matrix with row stride 3C starting at qkv + b*T*3C + h*hs, and the
// next head starts hs floats later: a strided batch with stride hs. Grouped-query attention's
// rows are [q | k | v] with NKV < NH key/value heads (struct Heads below). Likewise out / dout (B, T, C)
// with row stride C, and att / datt (B, NH, T, T) with stride T*T between heads.
#include <cuda_runtime.h>

#include <cmath>

#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/gemm.cuh"
#include "core/kernels/cuda/reduce.cuh"
#include "core/kernels/softmax_math.h"
#include "core/util/check.h"

namespace strata::kernels::cuda {
namespace {

// Blocks for `rows` rows of one block each (the kernels loop over rows grid-stride).
unsigned RowBlocks(long rows) {
  constexpr long kMaxBlocks = 1L << 20;
  return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

// In-place causal softmax of the scaled scores att (rows of T; row r is query i = r % T):
// entries [0, i] become probabilities, entries (i, T) exact zeros. As the CPU's softmax_row:
// p_j = SoftmaxExp(x_j, max), then p_j *= 1 / sum. One kReduceThreads block per row.
__global__ void __launch_bounds__(kReduceThreads) CausalSoftmax(float* att, long rows, int T) {
  __shared__ float shared[kReduceThreads / 32];
  for (long r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = att + r * T;
    const int n = static_cast<int>(r % T) + 1;  // entries [0, i]
    const float max = BlockRowMax(row, n, shared);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += kReduceThreads) {
      const float p = detail::SoftmaxExp(row[j], max);
      row[j] = p;
      sum += p;
    }
    sum = BlockReduce(sum, shared, SumOp());
    const float inv = 1.0f / sum;
    // Each thread rescales the entries it wrote above, so no barrier is needed in between.
    for (int j = threadIdx.x; j < T; j += kReduceThreads) row[j] = j < n ? row[j] * inv : 0.0f;
  }
}

// In-place softmax backward of rows of T: datt_j = SoftmaxBackward(att_j, datt_j, dot) for
// j <= i with dot = sum_{k <= i} att_k * datt_k, and 0 above the diagonal (so the full-size
// GEMMs that read datt afterwards add nothing there). One kReduceThreads block per row.
__global__ void __launch_bounds__(kReduceThreads)
    CausalSoftmaxBackward(float* datt, const float* att, long rows, int T) {
  __shared__ float shared[kReduceThreads / 32];
  for (long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* a = att + r * T;
    float* d = datt + r * T;
    const int n = static_cast<int>(r % T) + 1;
    float dot = 0.0f;
    for (int j = threadIdx.x; j < n; j += kReduceThreads) dot += a[j] * d[j];
    dot = BlockReduce(dot, shared, SumOp());
    for (int j = threadIdx.x; j < T; j += kReduceThreads) {
      d[j] = j < n ? detail::SoftmaxBackward(a[j], d[j], dot) : 0.0f;
    }
  }
}

// The packed row of grouped-query attention (attention.h): [q (NH heads) | k (NKV heads) | v (NKV
// heads)]. The GEMMs of one batch row run as `calls` strided batches of `heads` query heads:
// with NKV == NH one batch of all NH heads (k and v heads hs apart, as before grouped heads
// existed); otherwise one batch per key/value head, its `group` query heads reading that one k
// and v (stride 0).
struct Heads {
  int C, NH, NKV, hs, kvc, ld, group, calls, heads;
  long long kv_stride;
  Heads(const char* what, int C_, int NH_, int NKV_) : C(C_), NH(NH_), NKV(NKV_) {
    STRATA_CHECK(NH > 0 && C % NH == 0 && NKV > 0 && NH % NKV == 0)
        << what << ": C = " << C << ", NH = " << NH << ", NKV = " << NKV;
    hs = C / NH;
    kvc = NKV * hs;
    ld = C + 2 * kvc;
    group = NH / NKV;
    calls = group == 1 ? 1 : NKV;
    heads = group == 1 ? NH : group;
    kv_stride = group == 1 ? hs : 0;
  }
  long q(long b, int T, int j) const { return b * T * ld + static_cast<long>(j) * group * hs; }
  long k(long b, int T, int j) const { return b * T * ld + C + static_cast<long>(j) * hs; }
  long v(long b, int T, int j) const { return k(b, T, j) + kvc; }
};

// attention_forward at a compute dtype (gemm.cuh).
void Forward(Dtype dtype, float* out, float* att, const float* qkv, int B, int T, int C, int NH,
             int NKV) {
  const Heads H("attention_forward", C, NH, NKV);
  if (B <= 0 || T <= 0) return;
  const int hs = H.hs, ld = H.ld;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));  // as attention.cc
  const long long tt = static_cast<long long>(T) * T;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < H.calls; ++j) {
      float* a = att + (static_cast<long>(b) * NH + static_cast<long>(j) * H.group) * tt;
      // att[h] (T, T) = scale * q[h] (T, hs) @ k[h]^T.
      Gemm(dtype, false, true, T, T, hs, scale, qkv + H.q(b, T, j), ld, hs, qkv + H.k(b, T, j), ld,
           H.kv_stride, 0.0f, a, T, tt, H.heads, "attention_forward: scores");
    }
  }
  const long rows = static_cast<long>(B) * NH * T;
  CausalSoftmax<<<RowBlocks(rows), kReduceThreads, 0, l.stream>>>(att, rows, T);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "attention_forward: CausalSoftmax")) return;
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < H.calls; ++j) {
      const float* a = att + (static_cast<long>(b) * NH + static_cast<long>(j) * H.group) * tt;
      float* o = out + static_cast<long>(b) * T * C + static_cast<long>(j) * H.group * hs;
      // out[h] (T, hs) = att[h] (T, T) @ v[h] (T, hs).
      Gemm(dtype, false, false, T, hs, T, 1.0f, a, T, tt, qkv + H.v(b, T, j), ld, H.kv_stride, 0.0f,
           o, C, hs, H.heads, "attention_forward: att @ v");
    }
  }
}

// dk, dv of batch row b: one batched call per row without groups; with groups each key/value
// head adds its query heads' shares one head after another, in head order (a batched call would
// write one output from several heads at once).
void BackwardKv(Dtype dtype, const Heads& H, int b, int T, float* dqkv, const float* qkv,
                const float* att, const float* datt, const float* dout) {
  const int hs = H.hs, ld = H.ld;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const long long tt = static_cast<long long>(T) * T;
  const long b0 = static_cast<long>(b) * H.NH;
  if (H.group == 1) {
    // dk[h] (T, hs) += scale * dpre[h]^T @ q[h]; dv[h] (T, hs) += att[h]^T @ dout[h].
    Gemm(dtype, true, false, T, hs, T, scale, datt + b0 * tt, T, tt, qkv + H.q(b, T, 0), ld, hs,
         1.0f, dqkv + H.k(b, T, 0), ld, hs, H.NH, "attention_backward: dk");
    Gemm(dtype, true, false, T, hs, T, 1.0f, att + b0 * tt, T, tt,
         dout + static_cast<long>(b) * T * H.C, H.C, hs, 1.0f, dqkv + H.v(b, T, 0), ld, hs, H.NH,
         "attention_backward: dv");
    return;
  }
  for (int h = 0; h < H.NH; ++h) {
    const int j = h / H.group;
    const long head = static_cast<long>(b) * T * ld + static_cast<long>(h) * hs;
    Gemm(dtype, true, false, T, hs, T, scale, datt + (b0 + h) * tt, T, tt, qkv + head, ld, hs, 1.0f,
         dqkv + H.k(b, T, j), ld, hs, 1, "attention_backward: dk");
    Gemm(dtype, true, false, T, hs, T, 1.0f, att + (b0 + h) * tt, T, tt,
         dout + static_cast<long>(b) * T * H.C + static_cast<long>(h) * hs, H.C, hs, 1.0f,
         dqkv + H.v(b, T, j), ld, hs, 1, "attention_backward: dv");
  }
}

// attention_backward at a compute dtype.
void Backward(Dtype dtype, float* dqkv, float* datt, const float* dout, const float* qkv,
              const float* att, int B, int T, int C, int NH, int NKV) {
  const Heads H("attention_backward", C, NH, NKV);
  if (B <= 0 || T <= 0) return;
  const int hs = H.hs, ld = H.ld;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));  // as attention.cc
  const long long tt = static_cast<long long>(T) * T;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < H.calls; ++j) {
      const long h0 = static_cast<long>(j) * H.group;
      // datt[h] (T, T) = dout[h] (T, hs) @ v[h]^T.
      Gemm(dtype, false, true, T, T, hs, 1.0f, dout + static_cast<long>(b) * T * C + h0 * hs, C,
           hs, qkv + H.v(b, T, j), ld, H.kv_stride, 0.0f,
           datt + (static_cast<long>(b) * NH + h0) * tt, T, tt, H.heads,
           "attention_backward: datt");
    }
  }
  const long rows = static_cast<long>(B) * NH * T;
  // datt becomes d(scores) / scale in place.
  CausalSoftmaxBackward<<<RowBlocks(rows), kReduceThreads, 0, l.stream>>>(datt, att, rows, T);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "attention_backward: softmax")) return;
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < H.calls; ++j) {
      const long h0 = static_cast<long>(j) * H.group;
      // dq[h] (T, hs) += scale * dpre[h] (T, T) @ k[h] (T, hs).
      Gemm(dtype, false, false, T, hs, T, scale, datt + (static_cast<long>(b) * NH + h0) * tt, T,
           tt, qkv + H.k(b, T, j), ld, H.kv_stride, 1.0f, dqkv + H.q(b, T, j), ld, hs, H.heads,
           "attention_backward: dq");
    }
    BackwardKv(dtype, H, b, T, dqkv, qkv, att, datt, dout);
  }
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

}  // namespace strata::kernels::cuda
