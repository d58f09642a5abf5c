// Residual add on the GPU (core/kernels/residual.h): element-wise. out may alias a or b (each
// element is read before it is written, by the same thread).
#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"

namespace strata::kernels::cuda {
namespace {

__global__ void ResidualForwardKernel(float* out, const float* a, const float* b, long n) {
  for (long i = GridIndex(); i < n; i += GridStride()) out[i] = a[i] + b[i];
}

// No __restrict: the two updates are made as the CPU makes them, even if da and db alias.
__global__ void ResidualBackwardKernel(float* da, float* db, const float* dout, long n) {
  for (long i = GridIndex(); i < n; i += GridStride()) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

}  // namespace

void residual_forward(float* out, const float* a, const float* b, long n) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ResidualForwardKernel<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(
      out, a, b, n);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "residual_forward: launch");
}

void residual_backward(float* da, float* db, const float* dout, long n) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ResidualBackwardKernel<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(
      da, db, dout, n);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "residual_backward: launch");
}

}  // namespace strata::kernels::cuda
