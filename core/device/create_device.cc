#include "core/device/create_device.h"

#include "core/device/kernel_table.h"
#include "core/util/option.h"

namespace strata {
namespace {

// NotSupported when cuda cannot run here; the line says why and what to do instead.
Status CheckGpuUsable(const DeviceChoice& choice) {
#ifndef STRATA_WITH_CUDA
  (void)choice;
  return AtFault(Option::kDevice,
                 Status::NotSupported(
                     Mention(Option::kDevice) +
                     " cuda: this strata was built without CUDA; rebuild with the CUDA toolkit "
                     "(-DSTRATA_WITH_CUDA=ON) on a machine with an NVIDIA GPU, or use " +
                     Mention(Option::kDevice) + " sim"));
#else
  const int count = CudaDeviceCount();
  if (count == 0) {
    return AtFault(
        Option::kDevice,
        Status::NotSupported(Mention(Option::kDevice) +
                             " cuda: no usable CUDA GPU (no NVIDIA driver or device found); check "
                             "nvidia-smi, or use " +
                             Mention(Option::kDevice) + " sim"),
        {{"gpus", 0}});
  }
  if (choice.cuda_ordinal < 0 || choice.cuda_ordinal >= count) {
    return AtFault(
        Option::kDevice,
        Status::InvalidArgument(Mention(Option::kDevice) + " cuda: GPU " +
                                std::to_string(choice.cuda_ordinal) + " does not exist; " +
                                std::to_string(count) + " CUDA device(s) present"),
        {{"got", choice.cuda_ordinal}, {"gpus", count}});
  }
  return Status::Ok();
#endif
}

// The table of `kind` at `dtype` (a bf16 table swaps the GEMM entries: both must be complete,
// or --dtype bf16 would call a nullptr).
Status CheckKernelsComplete(const std::string& kind, const KernelTable& table,
                            kernels::Dtype dtype) {
  if (table.complete()) return Status::Ok();
  const std::string what =
      "the " + std::string(kind == "cuda" ? "CUDA" : kind) + " kernel table" +
      (dtype == kernels::Dtype::kBf16 ? " of " + Mention(Option::kDtype) + " bf16" : "") +
      " is incomplete";
  const std::string missing =
      table.missing() == KernelTable{}.missing() ? "every op" : table.missing();
  return AtFault(
      Option::kDevice,
      Status::NotSupported(Mention(Option::kDevice) + " " + kind + ": " + what + " (missing " +
                           missing + "); use " + Mention(Option::kDevice) + " sim"));
}

}  // namespace

Status CheckDeviceChoice(const DeviceChoice& choice) {
  using kernels::Dtype;
  if (choice.kind == "sim") {
    STRATA_RETURN_IF_ERROR(CheckKernelsComplete(choice.kind, CpuKernelTable(), Dtype::kFp32));
    return CheckKernelsComplete(choice.kind, CpuBf16KernelTable(), Dtype::kBf16);
  }
  if (choice.kind == "cuda") {
    STRATA_RETURN_IF_ERROR(CheckGpuUsable(choice));
    STRATA_RETURN_IF_ERROR(CheckKernelsComplete(choice.kind, CudaKernelTable(), Dtype::kFp32));
    return CheckKernelsComplete(choice.kind, CudaBf16KernelTable(), Dtype::kBf16);
  }
  return NotOneOf(Option::kDevice, "sim or cuda", choice.kind);
}

Result<std::unique_ptr<Device>> CreateDevice(const DeviceChoice& choice,
                                             const SimDeviceOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckDeviceChoice(choice));
  std::unique_ptr<Device> device;
  if (choice.kind == "cuda") {
    STRATA_ASSIGN_OR_RETURN(device, CreateCudaDevice(choice.cuda_ordinal, options.capacity_bytes));
  } else {
    STRATA_ASSIGN_OR_RETURN(device, CreateSimDevice(options));
  }
  // The tables a device actually returns are the ones that run: check them too.
  for (kernels::Dtype dtype : {kernels::Dtype::kFp32, kernels::Dtype::kBf16}) {
    STRATA_RETURN_IF_ERROR(CheckKernelsComplete(choice.kind, device->kernels(dtype), dtype));
  }
  return device;
}

}  // namespace strata
