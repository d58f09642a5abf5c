// Tests of the cuda backend. Without a GPU (or in a build without CUDA) the only real check is
// that CreateCudaDevice says so clearly; every other test skips with the reason.
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

constexpr uint64_t kBudget = 64 << 20;

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) {
      GTEST_SKIP() << "no CUDA GPU: CudaDeviceCount() is 0 (no driver or device, or a build "
                      "without CUDA); the cuda backend is tested on GPU machines";
    }
    auto device = CreateCudaDevice(0, kBudget);
    ASSERT_TRUE(device.ok()) << device.status().to_string();
    device_ = std::move(device).value();
  }
  std::unique_ptr<Device> device_;
};

TEST(CudaDevice, WithoutGpuCreateIsNotSupportedWithReason) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA GPU is present; this tests its absence";
  auto device = CreateCudaDevice(0, kBudget);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kNotSupported);
  const std::string& msg = device.status().message();
  EXPECT_TRUE(msg.find("no CUDA GPU") != std::string::npos ||
              msg.find("built without CUDA") != std::string::npos)
      << msg;
  EXPECT_NE(msg.find("sim"), std::string::npos) << "should point at the sim device: " << msg;
}

TEST_F(CudaDeviceTest, AllocIsBudgetedAlignedAndCounted) {
  EXPECT_EQ(device_->name(), "cuda:0");
  auto a = device_->alloc(1000);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*a) % kDeviceAlignment, 0u);
  EXPECT_TRUE(device_->is_device_memory(*a, 1000));
  EXPECT_FALSE(device_->is_device_memory(*a, 1001));
  DeviceStats s = device_->stats();
  EXPECT_EQ(s.current_bytes, 4096u);
  EXPECT_EQ(s.capacity_bytes, kBudget);

  auto too_big = device_->alloc(kBudget);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find(std::to_string(kBudget)), std::string::npos);
  test_support::ExpectFault(too_big.status(), Option::kGpuMem,
                            {{"need_bytes", int64_t{kBudget}},
                             {"in_use_bytes", 4096},
                             {"capacity_bytes", int64_t{kBudget}}});
  test_support::ExpectFault(CreateCudaDevice(0, 0).status(), Option::kGpuMem, {{"got", 0}});

  device_->free(*a);
  EXPECT_FALSE(device_->is_device_memory(*a, 1));
  s = device_->stats();
  EXPECT_EQ(s.current_bytes, 0u);
  EXPECT_EQ(s.peak_bytes, 4096u);
  EXPECT_EQ(s.alloc_count, 1u);
  EXPECT_EQ(s.free_count, 1u);
}

TEST_F(CudaDeviceTest, StreamCopyRoundTripThroughPinnedMemory) {
  const size_t n = 1 << 20;
  std::vector<uint8_t> src(n), dst(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 13 + 1);
  ASSERT_TRUE(device_->register_host(src.data(), n).ok());
  ASSERT_TRUE(device_->register_host(dst.data(), n).ok());
  auto up = device_->create_stream("up");
  auto down = device_->create_stream("down");
  auto ready = device_->create_event();
  void* d = *device_->alloc(n);
  ASSERT_TRUE(device_->copy_async(d, src.data(), n, CopyKind::kHostToDevice, *up).ok());
  up->record(*ready);
  down->wait(*ready);
  ASSERT_TRUE(device_->copy_async(dst.data(), d, n, CopyKind::kDeviceToHost, *down).ok());
  ASSERT_TRUE(down->synchronize().ok());
  EXPECT_TRUE(ready->query());
  EXPECT_EQ(src, dst);
  EXPECT_EQ(device_->copy_async(d, d, 16, CopyKind::kHostToDevice, *up).code(),
            StatusCode::kInvalidArgument);
  device_->free(d);
  EXPECT_TRUE(device_->unregister_host(src.data()).ok());
  EXPECT_TRUE(device_->unregister_host(dst.data()).ok());
  EXPECT_TRUE(device_->synchronize().ok());
}

TEST_F(CudaDeviceTest, StreamLaunchOrderAndStickyErrors) {
  auto s = device_->create_stream("host-fn");
  std::vector<int> seen;
  for (int i = 0; i < 100; ++i) s->launch([&seen, i] { seen.push_back(i); });
  ASSERT_TRUE(s->synchronize().ok());
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i);

  bool ran_after = false;
  s->launch([] { throw std::runtime_error("callback exploded"); });
  s->launch([&] { ran_after = true; });
  Status status = s->synchronize();
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("callback exploded"), std::string::npos);
  EXPECT_FALSE(ran_after);
  EXPECT_EQ(device_->synchronize(), status);
}

TEST_F(CudaDeviceTest, StreamWaitsOnEventFromAnotherStream) {
  auto a = device_->create_stream("a");
  auto b = device_->create_stream("b");
  auto done_a = device_->create_event();
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::vector<std::string> order;  // appended in stream order, a then b
  a->launch([&] {
    open.wait();
    order.push_back("a");
  });
  a->record(*done_a);
  b->wait(*done_a);
  b->launch([&] { order.push_back("b"); });
  EXPECT_FALSE(done_a->query());
  gate.set_value();
  ASSERT_TRUE(b->synchronize().ok());
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace strata
