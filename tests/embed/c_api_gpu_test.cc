// The embedding runtime's device tier on a real GPU (device=cuda): a tensor goes up to GPU memory
// and comes back through the pinned host pool under the gpu_mem budget, its bytes intact. In the
// `gpu` label; without a usable GPU the runtime refuses device=cuda (c_api_errors_test.cc) and
// this skips, saying why. The same test on the sim device runs everywhere: its first GPU run
// (H200, 2026-11-28) failed in the test itself (a host-tier read of a tensor of two pages, which
// the API refuses), a mistake the sim variant shows without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/embed/embed_test_util.h"

namespace strata::embed::test {
namespace {

// 12000 bytes: one page of 16 KiB, so the host tier can hand out one pointer to read it back
// (a tensor of several pages is acquired whole on the device tier only).
constexpr size_t kFloats = 3000;

void DeviceTierRoundTrip(const char* device) {
  strata_runtime* rt = nullptr;
  const strata_status made = MakeRuntime(
      {{"device", device}, {"host_mem", "8M"}, {"page_size", "16K"}, {"gpu_mem", "1M"}}, &rt);
  if (made == STRATA_NOT_SUPPORTED) GTEST_SKIP() << "no usable CUDA GPU: " << LastError();
  ASSERT_EQ(made, STRATA_OK) << LastError();
  std::vector<strata_tensor> params, grads;
  RegisterLayers(rt, 2, kFloats, [](int) { return 0.0f; }, &params, &grads);
  std::vector<float> pattern(kFloats);
  for (size_t i = 0; i < kFloats; ++i) pattern[i] = float(i) * 0.25f - 7.0f;
  WriteFloats(rt, params[0], pattern);

  void* d = nullptr;
  ASSERT_STRATA_OK(strata_acquire(rt, params[0], STRATA_READ, STRATA_TIER_DEVICE, &d));
  EXPECT_NE(d, nullptr);
  ASSERT_STRATA_OK(strata_release(rt, params[0]));
  // WRITE on the device: up, then down again on release; nothing wrote it, so the bytes stay.
  ASSERT_STRATA_OK(strata_acquire(rt, params[0], STRATA_WRITE, STRATA_TIER_DEVICE, &d));
  ASSERT_STRATA_OK(strata_release(rt, params[0]));
  EXPECT_EQ(ReadFloats(rt, params[0], kFloats), pattern);

  strata_stats s;
  ASSERT_STRATA_OK(strata_get_stats(rt, &s));
  EXPECT_GE(s.host_to_device_bytes, 2 * kFloats * 4);
  EXPECT_GE(s.device_to_host_bytes, kFloats * 4);
  EXPECT_EQ(s.device_bytes, 0u);
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiDeviceGpu, DeviceTierRoundTripsThroughTheGpu) { DeviceTierRoundTrip("cuda"); }

TEST(CApiDeviceTier, RoundTripsThroughTheSimDevice) { DeviceTierRoundTrip("sim"); }

}  // namespace
}  // namespace strata::embed::test
