// GELU on the GPU (core/kernels/gelu.h): element-wise, GeluForward / GeluGrad from gelu_math.h,
// so every element has the CPU kernel's bits (Note [Same bits on both backends] in hd.h).
#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"
#include "core/kernels/gelu_math.h"

namespace strata::kernels::cuda {
namespace {

__global__ void GeluForwardKernel(float* out, const float* inp, long n) {
  for (long i = GridIndex(); i < n; i += GridStride()) out[i] = detail::GeluForward(inp[i]);
}

__global__ void GeluBackwardKernel(float* dinp, const float* inp, const float* dout, long n) {
  for (long i = GridIndex(); i < n; i += GridStride()) {
    dinp[i] += detail::GeluGrad(inp[i]) * dout[i];
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, long n) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  GeluForwardKernel<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(
      out, inp, n);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "gelu_forward: launch");
}

void gelu_backward(float* dinp, const float* inp, const float* dout, long n) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  GeluBackwardKernel<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(
      dinp, inp, dout, n);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "gelu_backward: launch");
}

}  // namespace strata::kernels::cuda
