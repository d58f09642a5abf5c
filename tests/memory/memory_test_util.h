// Helpers shared by the memory tests: a sim device + fake NVMe + manager bundle, page patterns
// and reading a page's bytes back through an honest device->host copy.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/device/device.h"
#include "memory/memory_manager.h"
#include "tests/memory/fake_nvme_tier.h"

namespace strata::memory::testing {

struct Rig {
  std::unique_ptr<Device> device;
  std::unique_ptr<FakeNvmeTier> nvme;
  std::unique_ptr<MemoryManager> mm;  // destroyed first (declared last)
};

struct RigConfig {
  uint64_t page_bytes = 64 * 1024;
  uint64_t num_pages = 16;
  uint64_t device_pages = 4;
  uint64_t host_pages = 4;
  uint64_t nvme_pages = 64;
  bool with_nvme = true;
  EvictionPolicy policy = EvictionPolicy::kBelady;
  uint64_t stall_timeout_ms = 30'000;
  double link_gbps = 0.0;
  int nvme_latency_us = 0;
};

inline Rig MakeRig(const RigConfig& c) {
  Rig rig;
  SimDeviceOptions dopt;
  // Room for the page frames only: the budget is enforced by the manager, the arena checks it.
  dopt.capacity_bytes = c.device_pages * c.page_bytes;
  dopt.link_gbps = c.link_gbps;
  auto device = CreateSimDevice(dopt);
  STRATA_CHECK(device.ok()) << device.status().ToString();
  rig.device = std::move(*device);
  if (c.with_nvme) {
    rig.nvme = std::make_unique<FakeNvmeTier>(c.page_bytes, c.nvme_pages, c.nvme_latency_us);
  }
  MemoryManagerOptions o;
  o.page_bytes = c.page_bytes;
  o.num_pages = c.num_pages;
  o.budgets.device_bytes = c.device_pages * c.page_bytes;
  o.budgets.host_bytes = c.host_pages * c.page_bytes;
  o.device = rig.device.get();
  o.nvme = rig.nvme.get();
  o.policy = c.policy;
  o.stall_timeout_ms = c.stall_timeout_ms;
  auto mm = MemoryManager::Create(o);
  STRATA_CHECK(mm.ok()) << mm.status().ToString();
  rig.mm = std::move(*mm);
  return rig;
}

// Word i of page `page` carrying tag `tag` (tag 0 = never written = zeros).
inline uint64_t PatternWord(PageId page, uint64_t tag, uint64_t i) {
  return tag == 0 ? 0 : tag * 0x9E3779B97F4A7C15ull + page * 1315423911ull + i;
}

inline void FillPattern(void* buf, uint64_t bytes, PageId page, uint64_t tag) {
  auto* w = static_cast<uint64_t*>(buf);
  for (uint64_t i = 0; i < bytes / 8; ++i) w[i] = PatternWord(page, tag, i);
}

// The tag whose pattern starts `buf` (word 0), for failure messages; 0 for zeros.
inline uint64_t TagOf(const void* buf, PageId page) {
  uint64_t w0 = *static_cast<const uint64_t*>(buf);
  if (w0 == 0) return 0;
  uint64_t inv = 0x9E3779B97F4A7C15ull;  // Newton iteration for the inverse mod 2^64
  for (int i = 0; i < 6; ++i) inv *= 2 - 0x9E3779B97F4A7C15ull * inv;
  return (w0 - page * 1315423911ull) * inv;
}

// Index of the first mismatching word, or -1.
inline int64_t CheckPattern(const void* buf, uint64_t bytes, PageId page, uint64_t tag) {
  const auto* w = static_cast<const uint64_t*>(buf);
  for (uint64_t i = 0; i < bytes / 8; ++i) {
    if (w[i] != PatternWord(page, tag, i)) return int64_t(i);
  }
  return -1;
}

// Moves bytes between a test-owned host buffer and a pinned device page on `stream`.
inline Status CopyAndWait(Device& device, Stream& stream, void* dst, const void* src,
                          uint64_t bytes, CopyKind kind) {
  STRATA_RETURN_IF_ERROR(device.copy_async(dst, src, bytes, kind, stream));
  return stream.synchronize();
}

}  // namespace strata::memory::testing
