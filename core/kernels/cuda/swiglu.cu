// SwiGLU on the GPU (core/kernels/swiglu.h): element-wise over (row, column) with swiglu_math.h's
// arithmetic, so every element has the CPU kernel's bits.
#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"
#include "core/kernels/swiglu_math.h"

namespace strata::kernels::cuda {
namespace {

__global__ void SwigluForwardRows(float* out, const float* gate_up, long N, int F) {
  for (long r = blockIdx.y; r < N; r += gridDim.y) {
    const float* g = gate_up + r * 2 * F;
    for (long i = GridIndex(); i < F; i += GridStride()) out[r * F + i] = detail::SwigluOut(g[i], g[F + i]);
  }
}

__global__ void SwigluBackwardRows(float* dgate_up, const float* dout, const float* gate_up,
                                   long N, int F) {
  for (long r = blockIdx.y; r < N; r += gridDim.y) {
    const float* g = gate_up + r * 2 * F;
    float* d = dgate_up + r * 2 * F;
    for (long i = GridIndex(); i < F; i += GridStride()) {
      const float dy = dout[r * F + i];
      d[i] += detail::SwigluDgate(g[i], g[F + i], dy);
      d[F + i] += detail::SwigluDup(g[i], dy);
    }
  }
}

}  // namespace

void swiglu_forward(float* out, const float* gate_up, long N, int F) {
  if (N <= 0 || F <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  SwigluForwardRows<<<RowsGrid(N, F), ::strata::cuda::kThreads, 0, l.stream>>>(out, gate_up, N, F);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "swiglu_forward: launch");
}

void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, long N, int F) {
  if (N <= 0 || F <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  SwigluBackwardRows<<<RowsGrid(N, F), ::strata::cuda::kThreads, 0, l.stream>>>(dgate_up, dout,
                                                                               gate_up, N, F);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "swiglu_backward: launch");
}

}  // namespace strata::kernels::cuda
