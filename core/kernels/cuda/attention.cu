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
// next head starts hs floats later: a strided batch with stride hs. Likewise out / dout (B, T, C)
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

// attention_forward at a compute dtype (gemm.cuh).
void Forward(Dtype dtype, float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  STRATA_CHECK(NH > 0 && C % NH == 0) << "attention_forward: C = " << C << ", NH = " << NH;
  if (B <= 0 || T <= 0) return;
  const int hs = C / NH;
  const int ld = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));  // as attention.cc
  const long long tt = static_cast<long long>(T) * T;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  for (int b = 0; b < B; ++b) {
    const float* q = qkv + static_cast<long>(b) * T * ld;
    const float* k = q + C;
    float* a = att + static_cast<long>(b) * NH * tt;
    // att[h] (T, T) = scale * q[h] (T, hs) @ k[h]^T.
    Gemm(dtype, false, true, T, T, hs, scale, q, ld, hs, k, ld, hs, 0.0f, a, T, tt, NH,
         "attention_forward: scores");
  }
  const long rows = static_cast<long>(B) * NH * T;
  CausalSoftmax<<<RowBlocks(rows), kReduceThreads, 0, l.stream>>>(att, rows, T);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "attention_forward: CausalSoftmax")) return;
  for (int b = 0; b < B; ++b) {
    const float* v = qkv + static_cast<long>(b) * T * ld + 2 * C;
    const float* a = att + static_cast<long>(b) * NH * tt;
    float* o = out + static_cast<long>(b) * T * C;
    // out[h] (T, hs) = att[h] (T, T) @ v[h] (T, hs).
    Gemm(dtype, false, false, T, hs, T, 1.0f, a, T, tt, v, ld, hs, 0.0f, o, C, hs, NH,
         "attention_forward: att @ v");
  }
}

// attention_backward at a compute dtype.
void Backward(Dtype dtype, float* dqkv, float* datt, const float* dout, const float* qkv,
              const float* att, int B, int T, int C, int NH) {
  STRATA_CHECK(NH > 0 && C % NH == 0) << "attention_backward: C = " << C << ", NH = " << NH;
  if (B <= 0 || T <= 0) return;
  const int hs = C / NH;
  const int ld = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));  // as attention.cc
  const long long tt = static_cast<long long>(T) * T;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  for (int b = 0; b < B; ++b) {
    const float* v = qkv + static_cast<long>(b) * T * ld + 2 * C;
    const float* dy = dout + static_cast<long>(b) * T * C;
    float* da = datt + static_cast<long>(b) * NH * tt;
    // datt[h] (T, T) = dout[h] (T, hs) @ v[h]^T.
    Gemm(dtype, false, true, T, T, hs, 1.0f, dy, C, hs, v, ld, hs, 0.0f, da, T, tt, NH,
         "attention_backward: datt");
  }
  const long rows = static_cast<long>(B) * NH * T;
  // datt becomes d(scores) / scale in place.
  CausalSoftmaxBackward<<<RowBlocks(rows), kReduceThreads, 0, l.stream>>>(datt, att, rows, T);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "attention_backward: softmax")) return;
  for (int b = 0; b < B; ++b) {
    const long head0 = static_cast<long>(b) * T * ld;
    const float* q = qkv + head0;
    const float* k = q + C;
    float* dq = dqkv + head0;
    float* dk = dq + C;
    float* dv = dq + 2 * C;
    const float* a = att + static_cast<long>(b) * NH * tt;
    const float* da = datt + static_cast<long>(b) * NH * tt;
    const float* dy = dout + static_cast<long>(b) * T * C;
    // dq[h] (T, hs) += scale * dpre[h] (T, T) @ k[h] (T, hs).
    Gemm(dtype, false, false, T, hs, T, scale, da, T, tt, k, ld, hs, 1.0f, dq, ld, hs, NH,
         "attention_backward: dq");
    // dk[h] (T, hs) += scale * dpre[h]^T @ q[h].
    Gemm(dtype, true, false, T, hs, T, scale, da, T, tt, q, ld, hs, 1.0f, dk, ld, hs, NH,
         "attention_backward: dk");
    // dv[h] (T, hs) += att[h]^T @ dout[h] (T, hs).
    Gemm(dtype, true, false, T, hs, T, 1.0f, a, T, tt, dy, C, hs, 1.0f, dv, ld, hs, NH,
         "attention_backward: dv");
  }
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

}  // namespace strata::kernels::cuda
