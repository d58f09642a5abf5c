#include "core/device/gpu_peak.h"

namespace strata {
namespace {

struct KnownGpu {
  const char* key;  // a substring of the CUDA device name
  double fp32_tflops;
  double bf16_tflops;
};

// Dense peaks from NVIDIA's datasheets (boost clock). More specific keys first: the first key
// the name contains wins.
constexpr KnownGpu kKnownGpus[] = {
    {"H100 PCIe", 51.2, 756.0},  {"H100 NVL", 60.0, 835.0}, {"H100", 66.9, 989.4},
    {"H200", 66.9, 989.4},       {"B200", 80.0, 2250.0},
    {"A100", 19.5, 312.0},       {"A800", 19.5, 312.0},     {"L40S", 91.6, 362.1},
    {"L40", 90.5, 181.0},        {"L4", 30.3, 121.0},       {"A10", 31.2, 125.0},
    {"RTX 4090", 82.6, 165.2},   {"RTX 3090", 35.6, 71.0},  {"V100", 15.7, 0.0},
    {"T4", 8.1, 0.0},
};

}  // namespace

GpuPeak GpuPeakFromTable(const std::string& name) {
  GpuPeak peak;
  peak.name = name;
  for (const KnownGpu& gpu : kKnownGpus) {
    if (name.find(gpu.key) == std::string::npos) continue;
    peak.fp32_tflops = gpu.fp32_tflops;
    peak.bf16_tflops = gpu.bf16_tflops;
    peak.source = "table";
    break;
  }
  return peak;
}

double Fp32TflopsFromProperties(int major, int minor, int sm_count, double clock_khz) {
  int lanes = 0;  // FP32 FMA lanes per SM
  if (major == 7 || (major == 8 && minor == 0)) lanes = 64;  // Volta, Turing, A100
  if ((major == 8 && minor != 0) || major >= 9) lanes = 128;  // GA10x, Ada, Hopper, Blackwell
  return double(sm_count) * lanes * 2.0 * clock_khz * 1e3 / 1e12;
}

}  // namespace strata
