#include "parallel/rank_fold_cuda.h"

namespace strata::parallel {
namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 65535;

// One thread per element (grid-stride): each element's terms are added in rank order, so the
// result does not depend on the launch shape.
template <typename T>
__global__ void RankFoldKernel(const T* chunks, size_t count, int ranks, T* out) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    T sum = chunks[i];
    for (int r = 1; r < ranks; ++r) sum = sum + chunks[static_cast<size_t>(r) * count + i];
    out[i] = sum;
  }
}

template <typename T>
cudaError_t Launch(const T* chunks, size_t count, int ranks, T* out, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  RankFoldKernel<T>
      <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(chunks, count, ranks, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchRankFold(const float* chunks, size_t count, int ranks, float* out,
                           cudaStream_t stream) {
  return Launch(chunks, count, ranks, out, stream);
}

cudaError_t LaunchRankFold(const double* chunks, size_t count, int ranks, double* out,
                           cudaStream_t stream) {
  return Launch(chunks, count, ranks, out, stream);
}

}  // namespace strata::parallel
