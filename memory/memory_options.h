// MemoryManagerOptions: what a MemoryManager is built with (memory/memory_manager.h).
#pragma once

#include <cstdint>

#include "core/util/sizes.h"
#include "memory/eviction_policy.h"
#include "memory/nvme_tier.h"
#include "memory/page_plan.h"

namespace strata {
class Device;
}  // namespace strata

namespace strata::memory {

struct MemoryManagerOptions {
  uint64_t page_bytes = kDefaultPageBytes;  // a multiple of 4 KiB (IsValidPageSize)
  uint64_t num_pages = 0;
  uint64_t host_bytes = 0;   // the pinned host pool (whole pages of it are used)
  Device* device = nullptr;  // borrowed, optional: the host pool is registered with it (pinned
                             // memory for fast copies, cudaHostRegister on CUDA)
  NvmeTier* nvme = nullptr;  // borrowed; nullptr: no NVMe tier (host is the last tier)
  EvictionPolicy policy = EvictionPolicy::kBelady;
  uint64_t stall_timeout_ms = 30'000;
  uint32_t max_workers = 64;
  // Eviction write-backs to NVMe share commits (Note [Grouped write-back]): at most this many
  // pages, and at most this many bytes (always at least one page), are staged for one commit.
  // Bigger batches mean fewer commits (one fdatasync + one RocksDB write each) but may write
  // back a page that is written again before it is evicted; 1 commits every write-back alone
  // (InvalidArgument when 0). Each staged page holds an NVMe slot until the commit
  // (copy-on-write); when the tier has no free slot the manager commits what is staged and
  // goes on.
  uint64_t write_back_batch_pages = 64;
  uint64_t write_back_batch_bytes = 256 * kMiB;
};

}  // namespace strata::memory
