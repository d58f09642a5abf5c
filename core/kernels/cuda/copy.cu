// copy and finish (core/kernels/copy.h) on the GPU: a device-to-device copy in stream order, and
// a wait for the current launch's stream (Note [CUDA kernels on the stream's thread]).
#include <cuda_runtime.h>

#include "core/device/cuda_launch.h"
#include "core/kernels/cuda/cuda_kernels.h"

namespace strata::kernels::cuda {

void copy(float* dst, const float* src, long n) {
  if (n <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ::strata::cuda::CheckCuda(cudaMemcpyAsync(dst, src, sizeof(float) * static_cast<size_t>(n),
                                            cudaMemcpyDeviceToDevice, l.stream),
                            "copy: cudaMemcpyAsync");
}

void finish() {
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  ::strata::cuda::CheckCuda(cudaStreamSynchronize(l.stream), "finish: cudaStreamSynchronize");
}

}  // namespace strata::kernels::cuda
