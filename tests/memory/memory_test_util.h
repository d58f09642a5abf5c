// Helpers shared by the memory tests: a fake (or real) NVMe tier + manager bundle and page
// patterns.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "memory/memory_manager.h"
#include "memory/page_store_nvme_tier.h"
#include "storage/page_store.h"
#include "tests/common/scratch_dir.h"
#include "tests/memory/fake_nvme_tier.h"

namespace strata::memory::testing {

using ::strata::test_support::ScratchDir;

inline std::unique_ptr<storage::PageStore> OpenStore(const std::string& dir, uint64_t page_bytes,
                                                     uint64_t pages,
                                                     storage::FaultInjector* faults = nullptr) {
  storage::PageStoreOptions o;
  o.dirs = {dir};
  o.page_bytes = page_bytes;
  o.capacity_bytes = pages * page_bytes;
  o.faults = faults;
  auto store = storage::PageStore::Open(o);
  STRATA_CHECK(store.ok()) << store.status().to_string();
  return std::move(store).value();
}

// Members are destroyed bottom-up: the manager first, the scratch directory last.
struct Rig {
  std::unique_ptr<ScratchDir> dir;
  std::unique_ptr<storage::PageStore> store;
  std::unique_ptr<PageStoreNvmeTier> store_tier;
  std::unique_ptr<FakeNvmeTier> nvme;
  std::unique_ptr<MemoryManager> mm;
};

struct RigConfig {
  uint64_t page_bytes = 64 * 1024;
  uint64_t num_pages = 16;
  uint64_t host_pages = 4;
  uint64_t nvme_pages = 64;
  bool with_nvme = true;
  EvictionPolicy policy = EvictionPolicy::kBelady;
  uint64_t stall_timeout_ms = 30'000;
  int nvme_latency_us = 0;
  bool real_store = false;  // the storage PageStore in a scratch dir instead of the fake
  uint64_t write_back_batch_pages = MemoryManagerOptions{}.write_back_batch_pages;
  storage::FaultInjector* faults = nullptr;  // with real_store: the store's disk misbehaves
};

inline Rig MakeRig(const RigConfig& c) {
  Rig rig;
  NvmeTier* nvme = nullptr;
  if (c.with_nvme && c.real_store) {
    rig.dir = std::make_unique<ScratchDir>();
    rig.store = OpenStore(rig.dir->path(), c.page_bytes, c.nvme_pages, c.faults);
    rig.store_tier = std::make_unique<PageStoreNvmeTier>(rig.store.get());
    nvme = rig.store_tier.get();
  } else if (c.with_nvme) {
    rig.nvme = std::make_unique<FakeNvmeTier>(c.page_bytes, c.nvme_pages, c.nvme_latency_us);
    nvme = rig.nvme.get();
  }
  MemoryManagerOptions o;
  o.page_bytes = c.page_bytes;
  o.num_pages = c.num_pages;
  o.host_bytes = c.host_pages * c.page_bytes;
  o.nvme = nvme;
  o.policy = c.policy;
  o.stall_timeout_ms = c.stall_timeout_ms;
  o.write_back_batch_pages = c.write_back_batch_pages;
  auto mm = MemoryManager::Create(o);
  STRATA_CHECK(mm.ok()) << mm.status().to_string();
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

}  // namespace strata::memory::testing
