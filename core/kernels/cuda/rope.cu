// RoPE on the GPU (core/kernels/rope.h): one thread per (position, head, pair), the rotation from
// rope_math.h and the host-computed cos/sin table (uploaded by the caller), so every element has
// the CPU kernel's bits.
#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"
#include "core/kernels/rope_math.h"

namespace strata::kernels::cuda {
namespace {

template <bool kForward>
__global__ void RopeRows(float* qkv, const float* cos, const float* sin, long rows, int T, int ld,
                         int heads, int half) {
  const long pairs = static_cast<long>(heads) * half;
  for (long r = blockIdx.y; r < rows; r += gridDim.y) {
    const long t = r % T;
    for (long p = GridIndex(); p < pairs; p += GridStride()) {
      const long h = p / half;
      const long i = p % half;
      float* x = qkv + r * ld + h * 2 * half;
      const float c = cos[t * half + i];
      const float s = sin[t * half + i];
      if (kForward) {
        detail::RopeRotate(x[i], x[i + half], c, s, &x[i], &x[i + half]);
      } else {
        detail::RopeUnrotate(x[i], x[i + half], c, s, &x[i], &x[i + half]);
      }
    }
  }
}

template <bool kForward>
void Rotate(float* qkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
            int hs, const char* what) {
  const long rows = static_cast<long>(B) * T;
  if (rows <= 0 || heads <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  RopeRows<kForward><<<RowsGrid(rows, static_cast<long>(heads) * (hs / 2)),
                       ::strata::cuda::kThreads, 0, l.stream>>>(qkv, cos, sin, rows, T, ld, heads,
                                                                hs / 2);
  ::strata::cuda::CheckCuda(cudaGetLastError(), what);
}

}  // namespace

void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                  int hs) {
  Rotate<true>(qkv, cos, sin, B, T, ld, heads, hs, "rope_forward: launch");
}

void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                   int hs) {
  Rotate<false>(dqkv, cos, sin, B, T, ld, heads, hs, "rope_backward: launch");
}

}  // namespace strata::kernels::cuda
