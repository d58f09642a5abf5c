// LayerNorm on the GPU (core/kernels/layernorm.h). The row statistics are block reductions
// (reduce.cuh), so they agree with the CPU's to rounding; what is done with them is
// layernorm_math.h's, as on the CPU. dweight and dbias are column sums over rows taken in the
// CPU kernel's order exactly: chunks of kRowsPerChunk rows, each summed in row order from 0, then
// the chunks' sums added in chunk order, then the total added to the gradient.
#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"
#include "core/kernels/cuda/reduce.cuh"
#include "core/kernels/layernorm_math.h"

namespace strata::kernels::cuda {
namespace {

// Rows per partial sum of dweight/dbias: layernorm.cc's kRowsPerChunk, so that from the same
// inputs the parameter gradients have the CPU kernel's bits.
constexpr long kRowsPerChunk = 32;

// One block of kReduceThreads per row. Two passes (mean, then squared deviations), as the CPU.
__global__ void LayerNormForwardRows(float* out, float* mean, float* rstd, const float* inp,
                                     const float* weight, const float* bias, int N, int C) {
  __shared__ float shared[kReduceThreads / 32];
  const int tid = static_cast<int>(threadIdx.x);
  for (long r = blockIdx.x; r < N; r += gridDim.x) {
    const float* x = inp + r * C;
    float sum = 0.0f;
    for (int c = tid; c < C; c += kReduceThreads) sum += x[c];
    const float m = BlockReduce(sum, shared, SumOp()) / static_cast<float>(C);
    float sq = 0.0f;
    for (int c = tid; c < C; c += kReduceThreads) sq += (x[c] - m) * (x[c] - m);
    const float s = detail::LayerNormRstd(BlockReduce(sq, shared, SumOp()), C);
    float* y = out + r * C;
    for (int c = tid; c < C; c += kReduceThreads) {
      y[c] = detail::LayerNormOut(x[c], m, s, weight[c], bias[c]);
    }
    if (tid == 0) {
      mean[r] = m;
      rstd[r] = s;
    }
  }
}

// dinp += per row; one block of kReduceThreads per row.
__global__ void LayerNormBackwardRows(float* dinp, const float* dout, const float* inp,
                                      const float* weight, const float* mean, const float* rstd,
                                      int N, int C) {
  __shared__ float shared[kReduceThreads / 32];
  const int tid = static_cast<int>(threadIdx.x);
  for (long r = blockIdx.x; r < N; r += gridDim.x) {
    const float* x = inp + r * C;
    const float* dy = dout + r * C;
    const float m = mean[r];
    const float s = rstd[r];
    float sum_dnorm = 0.0f;
    float sum_dnorm_norm = 0.0f;
    for (int c = tid; c < C; c += kReduceThreads) {
      const float norm = detail::LayerNormNorm(x[c], m, s);
      const float dnorm = dy[c] * weight[c];
      sum_dnorm += dnorm;
      sum_dnorm_norm += dnorm * norm;
    }
    const float dnorm_mean = BlockReduce(sum_dnorm, shared, SumOp()) / static_cast<float>(C);
    const float dnorm_norm_mean =
        BlockReduce(sum_dnorm_norm, shared, SumOp()) / static_cast<float>(C);
    float* dx = dinp + r * C;
    for (int c = tid; c < C; c += kReduceThreads) {
      const float norm = detail::LayerNormNorm(x[c], m, s);
      const float dnorm = dy[c] * weight[c];
      dx[c] += detail::LayerNormDinp(dnorm, dnorm_mean, norm, dnorm_norm_mean, s);
    }
  }
}

// partial[k * 2C + c] = sum of dy * norm, partial[k * 2C + C + c] = sum of dy, over the rows of
// chunk k, in row order. One thread per (column, chunk): neighbouring threads read neighbouring
// columns. Both (chunk, column) loops are grid-stride.
__global__ void LayerNormParamChunks(float* partial, const float* dout, const float* inp,
                                     const float* mean, const float* rstd, int N, int C,
                                     long chunks) {
  for (long k = blockIdx.y; k < chunks; k += gridDim.y) {
    const long r0 = k * kRowsPerChunk;
    const long r1 = r0 + kRowsPerChunk < N ? r0 + kRowsPerChunk : N;
    for (long c = GridIndex(); c < C; c += GridStride()) {
      float dw = 0.0f;
      float db = 0.0f;
      for (long r = r0; r < r1; ++r) {
        const float dy = dout[r * C + c];
        dw += dy * detail::LayerNormNorm(inp[r * C + c], mean[r], rstd[r]);
        db += dy;
      }
      partial[k * 2 * C + c] = dw;
      partial[k * 2 * C + C + c] = db;
    }
  }
}

// dweight[c] +=, dbias[c] += the chunks' sums of column c, added in chunk order.
__global__ void LayerNormAddParamChunks(float* dweight, float* dbias, const float* partial, int C,
                                        long chunks) {
  for (long c = GridIndex(); c < C; c += GridStride()) {
    float dw = 0.0f;
    float db = 0.0f;
    for (long k = 0; k < chunks; ++k) {
      dw += partial[k * 2 * C + c];
      db += partial[k * 2 * C + C + c];
    }
    dweight[c] += dw;
    dbias[c] += db;
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
  if (N <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  LayerNormForwardRows<<<RowBlocks(N), kReduceThreads, 0, l.stream>>>(out, mean, rstd, inp, weight,
                                                                      bias, N, C);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "layernorm_forward: launch");
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int N, int C) {
  if (N <= 0 || C <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  LayerNormBackwardRows<<<RowBlocks(N), kReduceThreads, 0, l.stream>>>(dinp, dout, inp, weight,
                                                                       mean, rstd, N, C);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "layernorm_backward: launch rows")) return;
  const long chunks = (N + kRowsPerChunk - 1) / kRowsPerChunk;
  ::strata::cuda::StreamScratch partial(sizeof(float) * 2 * static_cast<size_t>(chunks) * C,
                                        "layernorm_backward: cudaMallocAsync");
  if (partial.get() == nullptr) return;
  const dim3 grid(::strata::cuda::BlocksFor(C),
                  static_cast<unsigned>(chunks < kMaxGridY ? chunks : kMaxGridY));
  LayerNormParamChunks<<<grid, ::strata::cuda::kThreads, 0, l.stream>>>(
      partial.as<float>(), dout, inp, mean, rstd, N, C, chunks);
  LayerNormAddParamChunks<<<::strata::cuda::BlocksFor(C), ::strata::cuda::kThreads, 0, l.stream>>>(
      dweight, dbias, partial.as<float>(), C, chunks);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "layernorm_backward: launch params");
}

}  // namespace strata::kernels::cuda
