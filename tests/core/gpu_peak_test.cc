// The GPU peak of `strata bench step --device cuda`: the known-GPU table by name (more specific
// names first) and the figure computed from a device's properties.
#include "core/device/gpu_peak.h"

#include <gtest/gtest.h>

#include "core/device/device.h"

namespace strata {
namespace {

TEST(GpuPeak, TableMatchesNamesMostSpecificFirst) {
  const GpuPeak sxm = GpuPeakFromTable("NVIDIA H100 80GB HBM3");
  EXPECT_EQ(sxm.source, "table");
  EXPECT_DOUBLE_EQ(sxm.fp32_tflops, 66.9);
  EXPECT_DOUBLE_EQ(sxm.bf16_tflops, 989.4);
  EXPECT_DOUBLE_EQ(GpuPeakFromTable("NVIDIA H100 PCIe").fp32_tflops, 51.2);
  EXPECT_DOUBLE_EQ(GpuPeakFromTable("NVIDIA A100-SXM4-80GB").fp32_tflops, 19.5);
  EXPECT_DOUBLE_EQ(GpuPeakFromTable("NVIDIA A10G").fp32_tflops, 31.2);
  EXPECT_DOUBLE_EQ(GpuPeakFromTable("NVIDIA L40S").fp32_tflops, 91.6);
  EXPECT_DOUBLE_EQ(GpuPeakFromTable("NVIDIA L4").fp32_tflops, 30.3);
  const GpuPeak unknown = GpuPeakFromTable("Some Future GPU");
  EXPECT_EQ(unknown.fp32_tflops, 0.0);
  EXPECT_EQ(unknown.source, "");
}

TEST(GpuPeak, PropertiesGiveLanesTimesClock) {
  // H100 SXM: 132 SMs x 128 lanes x 2 x 1.98 GHz = 66.9 TFLOP/s, the datasheet's figure.
  EXPECT_NEAR(Fp32TflopsFromProperties(9, 0, 132, 1980000), 66.9, 0.05);
  // A100: 108 SMs x 64 lanes x 2 x 1.41 GHz = 19.5.
  EXPECT_NEAR(Fp32TflopsFromProperties(8, 0, 108, 1410000), 19.5, 0.05);
  EXPECT_EQ(Fp32TflopsFromProperties(6, 1, 28, 1500000), 0.0);  // Pascal: not known
}

TEST(GpuPeak, WithoutGpuIsNotSupported) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA GPU is present; this tests its absence";
  auto peak = CudaGpuPeak(0);
  ASSERT_FALSE(peak.ok());
  EXPECT_NE(peak.status().message().find("{device} sim"), std::string::npos)
      << peak.status().to_string();
}

}  // namespace
}  // namespace strata
