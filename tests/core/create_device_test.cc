// CreateDevice / CheckDeviceChoice: `--device sim|cuda` becomes a device, or one line naming
// --device that says why not (an unknown kind is a usage error; cuda without a GPU, or with a
// kernel table that is not filled in, is NotSupported).
#include "core/device/create_device.h"

#include <gtest/gtest.h>

#include <string>

#include "core/device/kernel_table.h"
#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

constexpr uint64_t kBudget = 1 << 20;

void ExpectOneLineNamingDevice(const Status& s) {
  EXPECT_NE(s.message().find("{device}"), std::string::npos) << s.to_string();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.to_string();
  test_support::ExpectFault(s, Option::kDevice);
}

TEST(CreateDevice, SimIsTheSimDeviceWithTheCpuKernels) {
  EXPECT_TRUE(CheckDeviceChoice({.kind = "sim"}).ok());
  auto device = CreateDevice({.kind = "sim"}, {.capacity_bytes = kBudget});
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  EXPECT_EQ((*device)->name(), "sim");
  EXPECT_EQ((*device)->stats().capacity_bytes, kBudget);
  EXPECT_EQ(&(*device)->kernels(), &CpuKernelTable());
}

TEST(CreateDevice, SimPassesItsOptionsThrough) {
  auto bad = CreateDevice({.kind = "sim"}, {.capacity_bytes = 0});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().to_string();
  test_support::ExpectFault(bad.status(), Option::kGpuMem, {{"got", 0}});
}

TEST(CreateDevice, UnknownKindIsAUsageError) {
  for (const char* kind : {"tpu", "", "CUDA", "sim "}) {
    const Status s = CheckDeviceChoice({.kind = kind});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    ExpectOneLineNamingDevice(s);
    EXPECT_NE(s.message().find(std::string("'") + kind + "'"), std::string::npos) << s.to_string();
    auto device = CreateDevice({.kind = kind}, {.capacity_bytes = kBudget});
    EXPECT_EQ(device.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(CreateDevice, CudaWithoutGpuIsNotSupported) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA GPU is present; this tests its absence";
  const Status s = CheckDeviceChoice({.kind = "cuda"});
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.to_string();
  ExpectOneLineNamingDevice(s);
  EXPECT_NE(s.message().find("{device} sim"), std::string::npos) << s.to_string();
  auto device = CreateDevice({.kind = "cuda"}, {.capacity_bytes = kBudget});
  EXPECT_EQ(device.status().code(), StatusCode::kNotSupported);
}

// With a GPU, the CUDA device is created with its complete kernel table.
TEST(CreateDevice, CudaWithGpuHasACompleteKernelTable) {
  if (CudaDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA GPU: CudaDeviceCount() is 0 (no driver or device, or a build "
                    "without CUDA)";
  }
  const Status s = CheckDeviceChoice({.kind = "cuda"});
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto device = CreateDevice({.kind = "cuda"}, {.capacity_bytes = kBudget});
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  EXPECT_TRUE((*device)->kernels().complete()) << (*device)->kernels().missing();
  const KernelTable& bf16 = (*device)->kernels(kernels::Dtype::kBf16);
  EXPECT_TRUE(bf16.complete()) << bf16.missing();
}

}  // namespace
}  // namespace strata
