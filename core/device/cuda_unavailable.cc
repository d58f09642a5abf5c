// The CUDA entry points of device.h for builds without the CUDA toolkit (STRATA_WITH_CUDA
// unset). With CUDA, core/device/cuda_device.cu defines them and this file is empty.
#ifndef STRATA_WITH_CUDA

#include "core/device/device.h"
#include "core/device/gpu_peak.h"
#include "core/util/option.h"

namespace strata {

// The same all-nullptr table as cuda_device.cu's: there are no CUDA kernels in this build.
const KernelTable& CudaKernelTable() {
  static const KernelTable table{};
  return table;
}

const KernelTable& CudaBf16KernelTable() { return CudaKernelTable(); }

int CudaDeviceCount() { return 0; }

Result<std::unique_ptr<Device>> CreateCudaDevice(int ordinal, uint64_t /*capacity_bytes*/) {
  return Status::NotSupported(
      "cuda:" + std::to_string(ordinal) +
      ": built without CUDA; rebuild with the CUDA toolkit installed (-DSTRATA_WITH_CUDA=ON) "
      "or use the sim device");
}

Result<GpuPeak> CudaGpuPeak(int ordinal) {
  return AtFault(Option::kDevice,
                 Status::NotSupported("cuda:" + std::to_string(ordinal) +
                                      ": built without CUDA; no GPU peak to report (use " +
                                      Mention(Option::kDevice) + " sim)"));
}

}  // namespace strata

#endif  // STRATA_WITH_CUDA
