// Counters (internal to memory/): the event counts behind MemoryStats, bumped by every part of
// the manager without a lock (relaxed atomics: each is an independent count).
#pragma once

#include <atomic>
#include <cstdint>

#include "memory/memory_stats.h"

namespace strata::memory::internal {

struct Counters {
  std::atomic<uint64_t> nvme_read_bytes{0}, nvme_write_bytes{0};
  std::atomic<uint64_t> hits{0}, misses{0}, evictions{0}, write_backs{0};
  std::atomic<uint64_t> commits{0}, forced_commits{0}, admission_waits{0}, discards{0};
  std::atomic<uint64_t> tick{1};  // LRU clock; 0 marks a demoted copy

  uint64_t next_tick() { return tick.fetch_add(1, std::memory_order_relaxed); }
  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
  }
  void fill(MemoryStats& s) const {
    s.nvme_read_bytes = nvme_read_bytes.load();
    s.nvme_write_bytes = nvme_write_bytes.load();
    s.hits = hits.load();
    s.misses = misses.load();
    s.evictions = evictions.load();
    s.write_backs = write_backs.load();
    s.nvme_commits = commits.load();
    s.forced_commits = forced_commits.load();
    s.admission_waits = admission_waits.load();
    s.discards = discards.load();
  }
};

}  // namespace strata::memory::internal
