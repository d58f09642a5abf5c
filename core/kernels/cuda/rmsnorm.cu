// RMSNorm on the GPU (core/kernels/rmsnorm.h). The row's sum of squares and the backward's row
// sum are block reductions (reduce.cuh), so they agree with the CPU's to rounding; what is done
// with them is rmsnorm_math.h's, as on the CPU. dweight is a column sum over rows in the CPU
// kernel's order: chunks of kRowsPerChunk rows, each summed in row order, then the chunks' sums
// in chunk order.
#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"
#include "core/kernels/cuda/reduce.cuh"
#include "core/kernels/rmsnorm_math.h"

namespace strata::kernels::cuda {
namespace {

constexpr long kRowsPerChunk = 32;  // rmsnorm.cc's

__global__ void RmsNormForwardRows(float* out, float* rstd, const float* inp, const float* weight,
                                   int N, int C, float eps) {
  __shared__ float shared[kReduceThreads / 32];
  const int tid = static_cast<int>(threadIdx.x);
  for (long r = blockIdx.x; r < N; r += gridDim.x) {
    const float* x = inp + r * C;
    float sq = 0.0f;
    for (int c = tid; c < C; c += kReduceThreads) sq += x[c] * x[c];
    const float s = detail::RmsNormRstd(BlockReduce(sq, shared, SumOp()), C, eps);
    float* y = out + r * C;
    for (int c = tid; c < C; c += kReduceThreads) y[c] = detail::RmsNormOut(x[c], s, weight[c]);
    if (tid == 0) rstd[r] = s;
  }
}

__global__ void RmsNormBackwardRows(float* dinp, const float* dout, const float* inp,
                                    const float* weight, const float* rstd, int N, int C) {
  __shared__ float shared[kReduceThreads / 32];
  const int tid = static_cast<int>(threadIdx.x);
  for (long r = blockIdx.x; r < N; r += gridDim.x) {
    const float* x = inp + r * C;
    const float* dy = dout + r * C;
    const float s = rstd[r];
    float sum = 0.0f;
    for (int c = tid; c < C; c += kReduceThreads) sum += (dy[c] * weight[c]) * (x[c] * s);
    const float mean = BlockReduce(sum, shared, SumOp()) / static_cast<float>(C);
    float* dx = dinp + r * C;
    for (int c = tid; c < C; c += kReduceThreads) {
      dx[c] += detail::RmsNormDinp(dy[c] * weight[c], x[c] * s, mean, s);
    }
  }
}

// partial[k * C + c] = sum over chunk k's rows, in row order, of dy * norm.
__global__ void RmsNormWeightChunks(float* partial, const float* dout, const float* inp,
                                    const float* rstd, int N, int C, long chunks) {
  for (long k = blockIdx.y; k < chunks; k += gridDim.y) {
    const long r0 = k * kRowsPerChunk;
    const long r1 = r0 + kRowsPerChunk < N ? r0 + kRowsPerChunk : N;
    for (long c = GridIndex(); c < C; c += GridStride()) {
      float dw = 0.0f;
      for (long r = r0; r < r1; ++r) dw += dout[r * C + c] * (inp[r * C + c] * rstd[r]);
      partial[k * C + c] = dw;
    }
  }
}

__global__ void RmsNormAddWeightChunks(float* dweight, const float* partial, int C, long chunks) {
  for (long c = GridIndex(); c < C; c += GridStride()) {
    float dw = 0.0f;
    for (long k = 0; k < chunks; ++k) dw += partial[k * C + c];
    dweight[c] += dw;
  }
}

}  // namespace

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                     float eps) {
  if (N <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  RmsNormForwardRows<<<RowBlocks(N), kReduceThreads, 0, l.stream>>>(out, rstd, inp, weight, N, C,
                                                                    eps);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "rmsnorm_forward: launch");
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int N, int C) {
  if (N <= 0 || C <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  RmsNormBackwardRows<<<RowBlocks(N), kReduceThreads, 0, l.stream>>>(dinp, dout, inp, weight,
                                                                     rstd, N, C);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "rmsnorm_backward: launch rows")) return;
  const long chunks = (N + kRowsPerChunk - 1) / kRowsPerChunk;
  ::strata::cuda::StreamScratch partial(sizeof(float) * static_cast<size_t>(chunks) * C,
                                        "rmsnorm_backward: cudaMallocAsync");
  if (partial.get() == nullptr) return;
  const dim3 grid(::strata::cuda::BlocksFor(C),
                  static_cast<unsigned>(chunks < kMaxGridY ? chunks : kMaxGridY));
  RmsNormWeightChunks<<<grid, ::strata::cuda::kThreads, 0, l.stream>>>(partial.as<float>(), dout,
                                                                      inp, rstd, N, C, chunks);
  RmsNormAddWeightChunks<<<::strata::cuda::BlocksFor(C), ::strata::cuda::kThreads, 0, l.stream>>>(
      dweight, partial.as<float>(), C, chunks);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "rmsnorm_backward: launch weight");
}

}  // namespace strata::kernels::cuda
