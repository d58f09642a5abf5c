// The rank_fold.cu kernel against FoldInRankOrder, bit for bit: the NCCL backend's reduce-scatter
// folds the ranks' chunks on the GPU with it, and Note [Deterministic reductions] needs it to give
// the host fold's bits (plain adds in rank order, no FMA, no flush to zero). Without a GPU the
// test skips with the reason; GPU machines run it (docs/parallel.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/device/device.h"
#include "parallel/rank_fold.h"

#if STRATA_WITH_CUDA
#include <cuda_runtime.h>

#include "parallel/rank_fold_cuda.h"
#endif

namespace strata::parallel {
namespace {

#if STRATA_WITH_CUDA
// Values over many magnitudes, subnormals and signed zeros among them, so rounding, FMA
// contraction or a flush to zero would change some sums.
template <typename T>
std::vector<T> MixedValues(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> unit(-1, 1);
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (i % 7) {
      case 0: v[i] = std::numeric_limits<T>::denorm_min() * T(i % 97); break;
      case 1: v[i] = (i % 2) ? T(0) : -T(0); break;
      default: v[i] = std::ldexp(unit(rng), exponent(rng)); break;
    }
  }
  return v;
}

template <typename T>
void ExpectKernelMatchesHost(size_t count, int ranks) {
  std::vector<T> chunks = MixedValues<T>(count * ranks, uint32_t(count * 31 + ranks));
  std::vector<T> host(count), gpu(count);
  FoldInRankOrder(chunks.data(), count, ranks, host.data());
  T* d_chunks = nullptr;
  T* d_out = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&d_chunks, chunks.size() * sizeof(T)));
  ASSERT_EQ(cudaSuccess, cudaMalloc(&d_out, count * sizeof(T)));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(d_chunks, chunks.data(), chunks.size() * sizeof(T),
                                    cudaMemcpyHostToDevice));
  ASSERT_EQ(cudaSuccess, cudaMemset(d_out, 0xff, count * sizeof(T)));  // NaN: unwritten shows
  ASSERT_EQ(cudaSuccess, LaunchRankFold(d_chunks, count, ranks, d_out, nullptr));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  ASSERT_EQ(cudaSuccess, cudaMemcpy(gpu.data(), d_out, count * sizeof(T), cudaMemcpyDeviceToHost));
  cudaFree(d_chunks);
  cudaFree(d_out);
  size_t differ = 0;
  for (size_t i = 0; i < count; ++i) differ += std::memcmp(&host[i], &gpu[i], sizeof(T)) != 0;
  EXPECT_EQ(differ, 0u) << count << " elements, " << ranks << " ranks";
}
#endif

TEST(RankFoldGpu, KernelGivesTheHostFoldsBits) {
#if !STRATA_WITH_CUDA
  GTEST_SKIP() << "built without CUDA: the rank-fold kernel is not compiled";
#else
  if (CudaDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA GPU: the rank-fold kernel runs on GPU machines (this machine has "
                    "none)";
  }
  // Small, odd, and past the kernel's grid cap (65535 blocks of 256 threads), so the
  // grid-stride loop runs more than once per thread.
  for (size_t count : {size_t(1), size_t(1000), size_t(65535) * 256 + 4099}) {
    for (int ranks : {1, 2, 3, 4}) {
      ExpectKernelMatchesHost<float>(count, ranks);
      ExpectKernelMatchesHost<double>(count, ranks);
    }
  }
#endif
}

}  // namespace
}  // namespace strata::parallel
