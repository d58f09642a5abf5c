// CreateDevice: the one place a trainer turns `--device sim|cuda` into a Device.
//
// Both trainers (scheduler/in_memory_trainer.cc, scheduler/paged_trainer.cc) create their device here, so
// that the checks a user needs (is there a GPU, can its backend train) are the same for both and
// happen before any training work. Errors are one line naming --device:
// - an unknown kind is InvalidArgument (a usage error; exit code 2 in the CLI);
// - cuda without a usable GPU (built without CUDA, or CudaDeviceCount() == 0) is NotSupported;
// - a backend whose KernelTable is not complete (the CUDA one today) is NotSupported.
#pragma once

#include <memory>
#include <string>

#include "core/device/device.h"
#include "core/util/status.h"

namespace strata {

struct DeviceChoice {
  std::string kind = "sim";  // --device: sim | cuda
  int cuda_ordinal = 0;      // which GPU for kind == "cuda"
};

// Everything CreateDevice checks that needs no device: the kind, a usable GPU for cuda, and a
// complete kernel table. Cheap; trainers call it before loading data or planning memory.
Status CheckDeviceChoice(const DeviceChoice& choice);

// The device of `choice`. options.capacity_bytes is the arena budget (--gpu-mem) of either
// backend; options.link_gbps throttles the sim device's copies and is ignored by cuda.
Result<std::unique_ptr<Device>> CreateDevice(const DeviceChoice& choice,
                                             const SimDeviceOptions& options);

}  // namespace strata
