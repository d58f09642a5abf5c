// Token + position embedding on the GPU (core/kernels/embedding.h).
//
// The backward gives the CPU kernel's bits: every gradient element receives its additions one at
// a time, in the CPU's order, into its running value.
// - dwpe[t, c]: one thread adds dout[b, t, c] for b = 0, 1, ...
// - dwte: a scatter-add by token (several positions may hold the same token). The CPU adds, for
//   each element, the positions r = 0, 1, ... whose token it is. Without atomics (whose order is
//   the hardware's), the positions are grouped by token with a stable radix sort (CUB; keys the
//   token's row in the slice, values the position, so each token's positions stay in order r),
//   and one thread per (token, channel) walks its token's positions in that order.
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"

namespace strata::kernels::cuda {
namespace {

__global__ void EmbeddingForwardKernel(float* out, const int32_t* tokens, const float* wte,
                                       const float* wpe, long rows, int T, int C) {
  for (long r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* e = wte + static_cast<long>(tokens[r]) * C;
    const float* p = wpe + (r % T) * C;
    float* y = out + r * C;
    for (long c = GridIndex(); c < C; c += GridStride()) y[c] = e[c] + p[c];
  }
}

// dwpe[t, c] += dout[b, t, c] for b = 0, 1, ..., one addition at a time (the CPU's order).
__global__ void PositionGradKernel(float* dwpe, const float* dout, int B, int T, int C) {
  for (long t = blockIdx.y; t < T; t += gridDim.y) {
    for (long c = GridIndex(); c < C; c += GridStride()) {
      float acc = dwpe[t * C + c];
      for (long b = 0; b < B; ++b) acc += dout[(b * T + t) * C + c];
      dwpe[t * C + c] = acc;
    }
  }
}

// keys[r] = the row of tokens[r] in the slice [vocab_begin, vocab_end), or `rows` (sorted last,
// skipped) for a token outside it; positions[r] = r.
__global__ void TokenKeysKernel(uint32_t* keys, int32_t* positions, const int32_t* tokens, long n,
                                int vocab_begin, int vocab_end) {
  for (long r = GridIndex(); r < n; r += GridStride()) {
    const int32_t token = tokens[r];
    const bool in_slice = token >= vocab_begin && token < vocab_end;
    keys[r] = static_cast<uint32_t>(in_slice ? token - vocab_begin : vocab_end - vocab_begin);
    positions[r] = static_cast<int32_t>(r);
  }
}

// For each run of equal keys in the sorted keys (a token's positions, in order r), starting at
// sorted index i: dwte[key, c] += dout[positions[j], c] for the run's j in order. Rows of the
// grid are sorted indices; a block whose index is not a run's start (or is the out-of-slice run)
// has nothing to do. Every dwte element is written by exactly one thread.
__global__ void TokenGradKernel(float* dwte, const float* dout, const uint32_t* keys,
                                const int32_t* positions, long n, int C, uint32_t rows) {
  for (long i = blockIdx.y; i < n; i += gridDim.y) {
    const uint32_t key = keys[i];
    if (key >= rows || (i > 0 && keys[i - 1] == key)) continue;
    float* dw = dwte + static_cast<long>(key) * C;
    for (long c = GridIndex(); c < C; c += GridStride()) {
      float acc = dw[c];
      for (long j = i; j < n && keys[j] == key; ++j) {
        acc += dout[static_cast<long>(positions[j]) * C + c];
      }
      dw[c] = acc;
    }
  }
}

// The number of low key bits the sort must look at: keys lie in [0, max_key].
int KeyBits(uint32_t max_key) {
  int bits = 1;
  while (bits < 32 && (max_key >> bits) != 0) ++bits;
  return bits;
}

}  // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                       int T, int C) {
  const long rows = static_cast<long>(B) * T;
  if (rows <= 0 || C <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  EmbeddingForwardKernel<<<RowsGrid(rows, C), ::strata::cuda::kThreads, 0, l.stream>>>(
      out, tokens, wte, wpe, rows, T, C);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "embedding_forward: launch");
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                        int T, int C, int vocab_begin, int vocab_end) {
  const long n = static_cast<long>(B) * T;
  if (n <= 0 || C <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  if (dwpe != nullptr) {
    PositionGradKernel<<<RowsGrid(T, C), ::strata::cuda::kThreads, 0, l.stream>>>(dwpe, dout, B, T,
                                                                                  C);
    if (!::strata::cuda::CheckCuda(cudaGetLastError(), "embedding_backward: launch dwpe")) return;
  }
  if (vocab_begin >= vocab_end) return;
  const auto rows = static_cast<uint32_t>(vocab_end - vocab_begin);
  const int end_bit = KeyBits(rows);  // the out-of-slice key `rows` included
  const int items = static_cast<int>(n);

  ::strata::cuda::StreamScratch keys_in(sizeof(uint32_t) * n, "embedding_backward: keys");
  ::strata::cuda::StreamScratch keys_out(sizeof(uint32_t) * n, "embedding_backward: keys");
  ::strata::cuda::StreamScratch pos_in(sizeof(int32_t) * n, "embedding_backward: positions");
  ::strata::cuda::StreamScratch pos_out(sizeof(int32_t) * n, "embedding_backward: positions");
  if (keys_in.get() == nullptr || keys_out.get() == nullptr || pos_in.get() == nullptr ||
      pos_out.get() == nullptr) {
    return;
  }
  // The sort's temporary storage: a size query first (d_temp_storage == nullptr enqueues nothing).
  size_t temp_bytes = 0;
  if (!::strata::cuda::CheckCuda(
          cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in.as<uint32_t>(),
                                          keys_out.as<uint32_t>(), pos_in.as<int32_t>(),
                                          pos_out.as<int32_t>(), items, 0, end_bit, l.stream),
          "embedding_backward: sort size")) {
    return;
  }
  ::strata::cuda::StreamScratch temp(temp_bytes > 0 ? temp_bytes : 1,
                                     "embedding_backward: sort storage");
  if (temp.get() == nullptr) return;

  TokenKeysKernel<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(
      keys_in.as<uint32_t>(), pos_in.as<int32_t>(), tokens, n, vocab_begin, vocab_end);
  if (!::strata::cuda::CheckCuda(cudaGetLastError(), "embedding_backward: launch keys")) return;
  if (!::strata::cuda::CheckCuda(
          cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys_in.as<uint32_t>(),
                                          keys_out.as<uint32_t>(), pos_in.as<int32_t>(),
                                          pos_out.as<int32_t>(), items, 0, end_bit, l.stream),
          "embedding_backward: sort")) {
    return;
  }
  TokenGradKernel<<<RowsGrid(n, C), ::strata::cuda::kThreads, 0, l.stream>>>(
      dwte, dout, keys_out.as<uint32_t>(), pos_out.as<int32_t>(), n, C, rows);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "embedding_backward: launch dwte");
}

}  // namespace strata::kernels::cuda
