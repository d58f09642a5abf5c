// Launch shapes shared by the element-wise and row kernels of core/kernels/cuda/. Compiled by
// nvcc (C++17) only.
//
// Three loop shapes, all grid-stride so that any size fits the capped grids:
// - an element loop over [0, n): i from GridIndex(), step GridStride();
// - a (rows, cols) element loop (RowsGrid): r from blockIdx.y, step gridDim.y; within a row,
//   c from GridIndex(), step GridStride(). No 64-bit division per element, and neighbouring
//   threads touch neighbouring columns;
// - one block of kReduceThreads threads per row (RowBlocks, reduce.cuh's BlockReduce): r from
//   blockIdx.x, step gridDim.x. The row loop's bound is the same for every thread of a block,
//   so BlockReduce's __syncthreads() is reached by all of them.
#pragma once

#include <cuda_runtime.h>

#include "core/device/cuda_launch.h"

namespace strata::kernels::cuda {

// The limit of gridDim.y, also used to cap one-block-per-row grids.
inline constexpr long kMaxGridY = 65535;

// Blocks of kThreads for a (rows, cols) loop; rows >= 1 (callers return early on empty work).
inline dim3 RowsGrid(long rows, long cols) {
  return dim3(::strata::cuda::BlocksFor(cols),
              static_cast<unsigned>(rows < kMaxGridY ? rows : kMaxGridY));
}

// Blocks for a one-block-per-row kernel; rows >= 1.
inline unsigned RowBlocks(long rows) {
  return static_cast<unsigned>(rows < kMaxGridY ? rows : kMaxGridY);
}

// This thread's first index and the step of a grid-stride loop over gridDim.x blocks.
__device__ __forceinline__ long GridIndex() {
  return static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long GridStride() { return static_cast<long>(gridDim.x) * blockDim.x; }

}  // namespace strata::kernels::cuda
