// Deterministic reductions for the CUDA kernels. Compiled by nvcc (C++17) only.
//
// Note [Deterministic CUDA reductions]
// No reduction uses atomics: floating-point atomics add in whatever order the hardware
// schedules, and GPU runs must be bit-identical run to run. Instead:
// - a block reduces with a fixed shape: thread i first folds elements i, i + blockDim.x, ...
//   in order, then the block's threads are combined by a fixed tree (warp shuffles, then one
//   warp over the warps' results). With the block size fixed by the code, not by the device,
//   the order of every addition is fixed;
// - a sum over many rows (a bias gradient) is cut into fixed chunks of rows: each chunk's sum
//   is taken in row order, then the chunks' sums are added in chunk order.
// The orders differ from the CPU kernels', so results agree with them to rounding, not bits.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

#include "core/device/cuda_launch.h"

namespace strata::kernels::cuda {

// Threads per block of the row reductions; every block reduction assumes exactly this many.
inline constexpr int kReduceThreads = 256;
// Rows per partial sum of a column reduction.
inline constexpr int kColumnChunkRows = 64;

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  static __device__ __forceinline__ float identity() { return 0.0f; }
};
struct MaxOp {
  // The CPU's std::max(a, b) order: a NaN in `b` is dropped, as in its fold; a NaN logit still
  // shows in the loss, through the sum of exponentials.
  __device__ __forceinline__ float operator()(float a, float b) const { return b > a ? b : a; }
  static __device__ __forceinline__ float identity() { return -INFINITY; }
};

// Combines one value per thread of a kReduceThreads block in a fixed tree; every thread gets
// the result. `shared` holds kReduceThreads / 32 floats. Call from every thread of the block.
template <typename Op>
__device__ __forceinline__ float BlockReduce(float value, float* shared, Op op) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  }
  __syncthreads();  // `shared` may still be read by an earlier call
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (warp == 0) {  // only warp 0 reads the warps' results: no read beside lane 0's write
    value = lane < kReduceThreads / 32 ? shared[lane] : Op::identity();
    for (int offset = 16; offset > 0; offset /= 2) {
      value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
    }
    if (lane == 0) shared[0] = value;
  }
  __syncthreads();
  return shared[0];
}

// The maximum of x[0, n) over a block of kReduceThreads threads (thread i folds elements i,
// i + kReduceThreads, ... with MaxOp, then BlockReduce); every thread gets it; -inf when n is 0.
// Call from every thread of the block.
__device__ __forceinline__ float BlockRowMax(const float* x, long n, float* shared) {
  float max = MaxOp::identity();
  for (long j = threadIdx.x; j < n; j += kReduceThreads) max = MaxOp()(max, x[j]);
  return BlockReduce(max, shared, MaxOp());
}

// out[c] += sum over rows r of in[r * ld + c], for c < cols, in the fixed chunk order of Note
// [Deterministic CUDA reductions]. Enqueued on the current launch's stream.
void ColumnSumsAccumulate(float* out, const float* in, long rows, int cols, long ld,
                          const char* what);

}  // namespace strata::kernels::cuda
