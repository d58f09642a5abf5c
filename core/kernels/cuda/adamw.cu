// AdamW on the GPU (core/kernels/adamw.h): the update's float scalars are computed once on the
// host (AdamWScalarsOf, torch's rounding) and passed by value; each element then goes through
// AdamWElement, so parameters and moments get the CPU kernel's bits.
#include "core/device/cuda_launch.h"
#include "core/kernels/adamw_math.h"
#include "core/kernels/cuda/cuda_kernels.h"
#include "core/kernels/cuda/grid.cuh"

namespace strata::kernels::cuda {
namespace {

__global__ void AdamWKernel(float* param, const float* grad, float* m, float* v, long n,
                            detail::AdamWScalars k) {
  for (long i = GridIndex(); i < n; i += GridStride()) {
    float p = param[i];
    float mi = m[i];
    float vi = v[i];
    detail::AdamWElement(p, grad[i], mi, vi, k);
    param[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, long n,
                  const AdamWParams& hp, float grad_scale) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  const detail::AdamWScalars k = detail::AdamWScalarsOf(hp, grad_scale);
  AdamWKernel<<<::strata::cuda::BlocksFor(n), ::strata::cuda::kThreads, 0, l.stream>>>(param, grad,
                                                                                       m, v, n, k);
  ::strata::cuda::CheckCuda(cudaGetLastError(), "adamw_update: launch");
}

}  // namespace strata::kernels::cuda
