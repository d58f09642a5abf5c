// Runs kernel-table entries on a device backend for the kernel tests that cover every backend
// present (backend_kernels_test.cc): device buffers from host vectors, one launch on a stream,
// results back to the host. "sim" is always present; "cuda" needs a GPU, and its cases skip,
// saying why, when CudaDeviceCount() is 0.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "tests/core/kernel_test_util.h"

namespace strata::kernels::testing {

// How a backend's result must match the CPU kernel's: kBits on every backend (per-element
// arithmetic, Note [Same bits on both backends] in core/kernels/hd.h), or kRounding, bits on
// the sim device (the CPU kernels themselves) and within a tolerance elsewhere (reductions whose
// order differs).
enum class Match { kBits, kRounding };

class BackendKernelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda") {
      if (CudaDeviceCount() == 0) {
        GTEST_SKIP() << "no CUDA GPU: CudaDeviceCount() is 0 (no driver or device, or a build "
                        "without CUDA); the CUDA kernels run in the gpu label on a GPU machine";
      }
      auto device = CreateCudaDevice(0, 512ull << 20);
      ASSERT_TRUE(device.ok()) << device.status().to_string();
      device_ = std::move(device).value();
    } else {
      auto device = CreateSimDevice({.capacity_bytes = 512ull << 20});
      ASSERT_TRUE(device.ok()) << device.status().to_string();
      device_ = std::move(device).value();
    }
    stream_ = device_->create_stream("kernels");
  }

  void TearDown() override {
    if (device_ == nullptr) return;
    EXPECT_TRUE(stream_->synchronize().ok());
    stream_.reset();
    for (void* p : buffers_) device_->free(p);
  }

  const KernelTable& k() const { return device_->kernels(); }
  const KernelTable& k(Dtype dtype) const { return device_->kernels(dtype); }
  bool on_sim() const { return GetParam() == "sim"; }

  // A device copy of `host` (the copy is in stream order before later launches). The bytes are
  // staged in the fixture, since the copy runs later and `host` may be a temporary.
  template <typename T>
  T* upload(const std::vector<T>& host) {
    T* d = alloc<T>(host.size());
    if (!host.empty()) {
      const auto* bytes = reinterpret_cast<const char*>(host.data());
      staged_.emplace_back(bytes, bytes + host.size() * sizeof(T));
      EXPECT_TRUE(device_->copy_async(d, staged_.back().data(), host.size() * sizeof(T),
                                      CopyKind::kHostToDevice, *stream_)
                      .ok());
    }
    return d;
  }
  template <typename T>
  T* alloc(size_t n) {
    auto mem = device_->alloc(n == 0 ? sizeof(T) : n * sizeof(T));
    EXPECT_TRUE(mem.ok()) << mem.status().to_string();
    buffers_.push_back(*mem);
    return static_cast<T*>(*mem);
  }
  template <typename T>
  std::vector<T> download(const T* d, size_t n) {
    std::vector<T> host(n);
    if (n > 0) {
      EXPECT_TRUE(device_->copy_async(host.data(), d, n * sizeof(T), CopyKind::kDeviceToHost,
                                      *stream_)
                      .ok());
    }
    const Status s = stream_->synchronize();
    EXPECT_TRUE(s.ok()) << s.to_string();
    return host;
  }
  // Runs fn (which calls k()'s entries on device pointers) on the stream.
  void run(const std::function<void()>& fn) { stream_->launch(fn); }

  // got against the CPU kernel's `want`.
  void expect_match(const std::vector<float>& got, const std::vector<float>& want, Match match,
                    const std::string& what, double rtol = 2e-5, double atol = 2e-6) {
    ASSERT_EQ(got.size(), want.size()) << what;
    if (match == Match::kBits || on_sim()) {
      EXPECT_TRUE(bitwise_equal(got, want)) << what << " on " << GetParam()
                                            << ": not the CPU kernel's bits";
      return;
    }
    expect_near_all(got, to_double(want), rtol, atol, what + " on " + GetParam());
  }

 private:
  std::unique_ptr<Device> device_;
  std::unique_ptr<Stream> stream_;
  std::vector<void*> buffers_;
  std::deque<std::vector<char>> staged_;  // host bytes of queued uploads (stable addresses)
};

}  // namespace strata::kernels::testing
