// The arithmetic peak of a GPU, for `strata bench step --device cuda`'s fraction of peak:
// from a table of known GPUs by name (the datasheets' dense figures), else from the device's
// properties (SMs x FP32 lanes per SM x 2 x clock; no bf16 figure then).
#pragma once

#include <string>

#include "core/util/status.h"

namespace strata {

struct GpuPeak {
  std::string name;          // the device's name, as CUDA reports it
  double fp32_tflops = 0;    // FP32 FMA peak (CUDA cores), dense
  double bf16_tflops = 0;    // BF16 tensor-core peak with FP32 accumulation, dense; 0: unknown
  std::string source;        // "table" (known GPU) or "properties" (computed)
};

// The entry of the known-GPU table whose key the name contains ("NVIDIA H100 PCIe" matches the
// PCIe entry before the SXM one); fp32_tflops 0 when none does.
GpuPeak GpuPeakFromTable(const std::string& name);

// SMs x FP32 lanes per SM (by compute capability) x 2 FLOPs x clock. 0 for an unknown
// architecture (compute capability below 7.0).
double Fp32TflopsFromProperties(int major, int minor, int sm_count, double clock_khz);

// The peak of CUDA device `ordinal`: the table, else its properties. NotSupported without CUDA or
// without a GPU.
Result<GpuPeak> CudaGpuPeak(int ordinal);

}  // namespace strata
