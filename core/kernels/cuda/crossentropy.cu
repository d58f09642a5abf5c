// Softmax cross-entropy on the GPU (core/kernels/crossentropy.h). One block per row: the row's
// maximum and sum of exponentials are block reductions (reduce.cuh), so they agree with the
// CPU's to rounding; the per-element arithmetic and the row loss are softmax_math.h's, and the
// mean is summed in double in row order, as the CPU does.
#include <cmath>
#include <cstdint>

#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"
#include "core/kernels/cuda/loss.cuh"
#include "core/kernels/cuda/reduce.cuh"
#include "core/kernels/softmax_math.h"

namespace strata::kernels::cuda {
namespace {

// probs' row r = softmax(logits' row r); losses[r] = the row's loss. One block of
// kReduceThreads per row.
__global__ void SoftmaxLossRows(float* probs, double* losses, const float* logits,
                                const int32_t* targets, int N, int V) {
  __shared__ float shared[kReduceThreads / 32];
  const int tid = static_cast<int>(threadIdx.x);
  for (long r = blockIdx.x; r < N; r += gridDim.x) {
    const float* x = logits + r * V;
    const float max = BlockRowMax(x, V, shared);
    float sum = 0.0f;
    for (int v = tid; v < V; v += kReduceThreads) sum += detail::SoftmaxExp(x[v], max);
    sum = BlockReduce(sum, shared, SumOp());
    // The CPU stores exp(x - max), then multiplies it by inv: recomputing the exponential (same
    // bits) saves a read and a write of the row.
    const float inv = 1.0f / sum;
    float* p = probs + r * V;
    for (int v = tid; v < V; v += kReduceThreads) p[v] = detail::SoftmaxExp(x[v], max) * inv;
    if (tid == 0) losses[r] = detail::CrossEntropyRowLoss(max, sum, x[targets[r]]);
  }
}

// out = the mean of losses[0, N), N >= 1, summed in row order (one thread: a fixed order, and N
// is small next to the N * V of the softmax).
__global__ void MeanLossKernel(float* out, const double* losses, int N) {
  double total = 0.0;
  for (int r = 0; r < N; ++r) total += losses[r];
  *out = static_cast<float>(total / N);
}

__global__ void CrossEntropyBackwardKernel(float* dlogits, const float* probs,
                                           const int32_t* targets, float dloss, int N, int V) {
  for (long r = blockIdx.y; r < N; r += gridDim.y) {
    const float* p = probs + r * V;
    float* d = dlogits + r * V;
    const long t = targets[r];
    for (long v = GridIndex(); v < V; v += GridStride()) {
      d[v] = detail::CrossEntropyDlogit(d[v], p[v], v == t, dloss);
    }
  }
}

}  // namespace

float MeanLossToHost(const double* losses, int N, const char* what) {
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ::strata::cuda::StreamScratch mean(sizeof(float), what);
  if (mean.get() == nullptr) return NAN;
  MeanLossKernel<<<1, 1, 0, l.stream>>>(mean.as<float>(), losses, N);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), what)) return NAN;
  float loss = NAN;
  if (!::strata::cuda::CheckCuda(
          cudaMemcpyAsync(&loss, mean.get(), sizeof(float), cudaMemcpyDeviceToHost, l.stream),
          what)) {
    return NAN;
  }
  if (!::strata::cuda::CheckCuda(cudaStreamSynchronize(l.stream), what)) return NAN;
  return loss;
}

float crossentropy_forward(float* probs, const float* logits, const int32_t* targets, int N,
                           int V) {
  // N == 0: the CPU's mean of no rows. V == 0 has no valid target (0 <= target < V).
  if (N <= 0 || V <= 0) return 0.0f;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ::strata::cuda::StreamScratch losses(sizeof(double) * static_cast<size_t>(N),
                                       "crossentropy_forward: cudaMallocAsync");
  if (losses.get() == nullptr) return NAN;
  SoftmaxLossRows<<<RowBlocks(N), kReduceThreads, 0, l.stream>>>(probs, losses.as<double>(), logits,
                                                                 targets, N, V);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "crossentropy_forward: launch")) return NAN;
  return MeanLossToHost(losses.as<double>(), N, "crossentropy_forward: mean");
}

void crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets, float dloss,
                           int N, int V) {
  if (N <= 0 || V <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  CrossEntropyBackwardKernel<<<RowsGrid(N, V), ::strata::cuda::kThreads, 0, l.stream>>>(
      dlogits, probs, targets, dloss, N, V);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "crossentropy_backward: launch");
}

}  // namespace strata::kernels::cuda
