// CudaGpuPeak (gpu_peak.h) from the CUDA runtime's device name and attributes.
#include <cuda_runtime.h>

#include "core/device/cuda_status.h"
#include "core/device/gpu_peak.h"
#include "core/util/option.h"

namespace strata {

Result<GpuPeak> CudaGpuPeak(int ordinal) {
  cudaDeviceProp prop{};
  const Status props = cuda::CudaStatus(cudaGetDeviceProperties(&prop, ordinal),
                                        "cuda:" + std::to_string(ordinal) +
                                            ": cudaGetDeviceProperties (no GPU? use " +
                                            Mention(Option::kDevice) + " sim)");
  if (!props.ok()) {
    cudaGetLastError();
    return AtFault(Option::kDevice, props);
  }
  GpuPeak peak = GpuPeakFromTable(prop.name);
  if (peak.fp32_tflops > 0) return peak;
  int clock_khz = 0;
  STRATA_RETURN_IF_ERROR(cuda::CudaStatus(
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal), "cudaDevAttrClockRate"));
  peak.fp32_tflops =
      Fp32TflopsFromProperties(prop.major, prop.minor, prop.multiProcessorCount, clock_khz);
  peak.source = "properties";
  return peak;
}

}  // namespace strata
