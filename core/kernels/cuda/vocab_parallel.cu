// Vocab-parallel embedding and softmax cross-entropy on the GPU (core/kernels/vocab_parallel.h).
// Row maxima and sums are block reductions (reduce.cuh), agreeing with the CPU's to rounding;
// everything else is the CPU kernel's arithmetic element for element (the -0.0f fills, the rank
// order of the maximum, the division by the all-reduced sum, the mean in double in row order).
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

// Row r is wte_rows[tokens[r] - vocab_begin] when the token is in the slice, else -0.0f.
__global__ void EmbeddingRowsKernel(float* out, const int32_t* tokens, const float* wte_rows,
                                    long rows, int C, int vocab_begin, int vocab_end) {
  for (long r = blockIdx.y; r < rows; r += gridDim.y) {
    const int32_t token = tokens[r];
    const bool in_slice = token >= vocab_begin && token < vocab_end;
    const float* e = wte_rows + static_cast<long>(in_slice ? token - vocab_begin : 0) * C;
    float* y = out + r * C;
    for (long c = GridIndex(); c < C; c += GridStride()) y[c] = in_slice ? e[c] : -0.0f;
  }
}

// row_max[r] = the maximum of the row's first `valid` columns, -inf when valid is 0 (the
// reduction's identity). One block of kReduceThreads per row.
__global__ void LogitMaxRows(float* row_max, const float* logits, int N, int V, int valid) {
  __shared__ float shared[kReduceThreads / 32];
  const int tid = static_cast<int>(threadIdx.x);
  for (long r = blockIdx.x; r < N; r += gridDim.x) {
    const float* x = logits + r * V;
    const float max = BlockRowMax(x, valid, shared);
    if (tid == 0) row_max[r] = valid > 0 ? max : -INFINITY;
  }
}

// One block of kReduceThreads per row; see vocab_parallel_softmax_partial.
__global__ void SoftmaxPartialRows(float* probs, float* row_max, float* sums, const float* rank_max,
                                   int tp, const float* logits, const int32_t* targets, int N,
                                   int V, int valid, int vocab_begin) {
  __shared__ float shared[kReduceThreads / 32];
  const int tid = static_cast<int>(threadIdx.x);
  for (long r = blockIdx.x; r < N; r += gridDim.x) {
    // The ranks' maxima in rank order, as std::max(max, next) (every thread, the same bits).
    float max = rank_max[r];
    for (int s = 1; s < tp; ++s) {
      const float next = rank_max[static_cast<long>(s) * N + r];
      max = max < next ? next : max;
    }
    const float* x = logits + r * V;
    float* p = probs + r * V;
    float sum = 0.0f;
    for (int v = tid; v < valid; v += kReduceThreads) {
      const float e = detail::SoftmaxExp(x[v], max);
      p[v] = e;
      sum += e;
    }
    for (int v = valid + tid; v < V; v += kReduceThreads) p[v] = 0.0f;
    // After the reduction's barriers: every thread has read rank_max[., r] (in case the caller
    // passes a row_max that overlaps it).
    sum = BlockReduce(sum, shared, SumOp());
    if (tid == 0) {
      row_max[r] = max;
      sums[r] = sum;
      const int t = targets[r] - vocab_begin;
      sums[N + r] = (t >= 0 && t < valid) ? x[t] : -0.0f;
    }
  }
}

// probs' row r /= sums[r] (all V columns, padding's zeros included); losses[r] = the row's loss
// from the all-reduced statistics (written by one thread of the row's first column block).
__global__ void NormalizeLossRows(float* probs, double* losses, const float* row_max,
                                  const float* sums, int N, int V) {
  for (long r = blockIdx.y; r < N; r += gridDim.y) {
    const float inv = 1.0f / sums[r];
    float* p = probs + r * V;
    for (long v = GridIndex(); v < V; v += GridStride()) p[v] *= inv;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      losses[r] = detail::CrossEntropyRowLoss(row_max[r], sums[r], sums[N + r]);
    }
  }
}

__global__ void VocabParallelBackwardKernel(float* dlogits, const float* probs,
                                            const int32_t* targets, float dloss, int N, int V,
                                            int vocab_begin) {
  for (long r = blockIdx.y; r < N; r += gridDim.y) {
    const float* p = probs + r * V;
    float* d = dlogits + r * V;
    // The one-hot only where this rank owns the target: t in [0, V), else no column matches.
    const long t = static_cast<long>(targets[r]) - vocab_begin;
    for (long v = GridIndex(); v < V; v += GridStride()) {
      d[v] = detail::CrossEntropyDlogit(d[v], p[v], v == t, dloss);
    }
  }
}

}  // namespace

void vocab_parallel_embedding_forward(float* out, const int32_t* tokens, const float* wte_rows,
                                      int B, int T, int C, int vocab_begin, int vocab_end) {
  const long rows = static_cast<long>(B) * T;
  if (rows <= 0 || C <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  EmbeddingRowsKernel<<<RowsGrid(rows, C), ::strata::cuda::kThreads, 0, l.stream>>>(
      out, tokens, wte_rows, rows, C, vocab_begin, vocab_end);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "vocab_parallel_embedding_forward: launch");
}

void vocab_parallel_logit_max(float* row_max, const float* logits, int N, int V, int valid) {
  if (N <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  LogitMaxRows<<<RowBlocks(N), kReduceThreads, 0, l.stream>>>(row_max, logits, N, V, valid);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "vocab_parallel_logit_max: launch");
}

void vocab_parallel_softmax_partial(float* probs, float* row_max, float* sums,
                                    const float* rank_max, int tp, const float* logits,
                                    const int32_t* targets, int N, int V, int valid,
                                    int vocab_begin) {
  if (N <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  SoftmaxPartialRows<<<RowBlocks(N), kReduceThreads, 0, l.stream>>>(
      probs, row_max, sums, rank_max, tp, logits, targets, N, V, valid, vocab_begin);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "vocab_parallel_softmax_partial: launch");
}

float vocab_parallel_crossentropy_forward(float* probs, const float* row_max, const float* sums,
                                          int N, int V) {
  if (N <= 0) return 0.0f;  // the CPU's mean of no rows
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ::strata::cuda::StreamScratch losses(sizeof(double) * static_cast<size_t>(N),
                                       "vocab_parallel_crossentropy_forward: cudaMallocAsync");
  if (losses.get() == nullptr) return NAN;
  NormalizeLossRows<<<RowsGrid(N, V), ::strata::cuda::kThreads, 0, l.stream>>>(
      probs, losses.as<double>(), row_max, sums, N, V);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(),
                                 "vocab_parallel_crossentropy_forward: launch")) {
    return NAN;
  }
  return MeanLossToHost(losses.as<double>(), N, "vocab_parallel_crossentropy_forward: mean");
}

void vocab_parallel_crossentropy_backward(float* dlogits, const float* probs,
                                          const int32_t* targets, float dloss, int N, int V,
                                          int vocab_begin) {
  if (N <= 0 || V <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  VocabParallelBackwardKernel<<<RowsGrid(N, V), ::strata::cuda::kThreads, 0, l.stream>>>(
      dlogits, probs, targets, dloss, N, V, vocab_begin);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "vocab_parallel_crossentropy_backward: launch");
}

}  // namespace strata::kernels::cuda
