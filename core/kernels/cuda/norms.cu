// zero and chunk_sums_of_squares (core/kernels/norms.h) on the GPU.
//
// chunk_sums_of_squares gives the CPU's bits: each chunk is summed by eight threads, thread l
// taking the chunk's elements l, l + 8, ... in order into a double (the CPU's lane l), and the
// eight lanes are combined in the CPU's fixed tree. So a clipping norm is the same number on the
// sim device and on a GPU.
#include <cuda_runtime.h>

#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/norms.h"

namespace strata::kernels::cuda {
namespace {

constexpr int kLanes = 8;
constexpr int kChunksPerBlock = 32;  // 256 threads

__global__ void ChunkSumsKernel(const float* x, long n, long chunks, double* out) {
  __shared__ double lanes[kChunksPerBlock][kLanes];
  const int lane = threadIdx.x % kLanes;
  const int local = threadIdx.x / kLanes;
  for (long base = static_cast<long>(blockIdx.x) * kChunksPerBlock; base < chunks;
       base += static_cast<long>(gridDim.x) * kChunksPerBlock) {
    const long c = base + local;
    double sum = 0.0;
    if (c < chunks) {
      const long begin = c * kNormChunkFloats;
      const long end = begin + kNormChunkFloats < n ? begin + kNormChunkFloats : n;
      for (long i = begin + lane; i < end; i += kLanes) {
        const double d = x[i];
        sum += d * d;
      }
    }
    lanes[local][lane] = sum;
    __syncthreads();
    if (lane == 0 && c < chunks) {
      const double* l = lanes[local];
      out[c] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
    __syncthreads();  // the next round overwrites `lanes`
  }
}

}  // namespace

void zero(float* x, long n) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ::strata::cuda::CheckCuda(cudaMemsetAsync(x, 0, sizeof(float) * n, l.stream),
                            "zero: cudaMemsetAsync");
}

void chunk_sums_of_squares(const float* x, long n, double* host_out) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  const long chunks = (n + kNormChunkFloats - 1) / kNormChunkFloats;
  ::strata::cuda::StreamScratch sums(sizeof(double) * chunks, "chunk_sums_of_squares: partials");
  if (sums.get() == nullptr) return;
  const long blocks = (chunks + kChunksPerBlock - 1) / kChunksPerBlock;
  ChunkSumsKernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535),
                    kChunksPerBlock * kLanes, 0, l.stream>>>(x, n, chunks, sums.as<double>());
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "chunk_sums_of_squares: launch")) return;
  if (!::strata::cuda::CheckCuda(cudaMemcpyAsync(host_out, sums.get(), sizeof(double) * chunks,
                                                 cudaMemcpyDeviceToHost, l.stream),
                                 "chunk_sums_of_squares: copy to the host")) {
    return;
  }
  ::strata::cuda::CheckCuda(cudaStreamSynchronize(l.stream),
                            "chunk_sums_of_squares: cudaStreamSynchronize");
}

}  // namespace strata::kernels::cuda
