// Counters of the memory manager (MemoryManager::stats()), and the {current, peak} pair every
// pool keeps (PyTorch's allocator habit: a budget is only as good as its recorded peak).
#pragma once

#include <algorithm>
#include <cstdint>

#include "memory/tier.h"

namespace strata::memory {

// A level and its high-water mark. Not thread-safe: its owner's mutex guards it.
class CurrentPeak {
 public:
  void add(uint64_t n) {
    current_ += n;
    peak_ = std::max(peak_, current_);
  }
  void sub(uint64_t n) { current_ -= n; }
  uint64_t current() const { return current_; }
  uint64_t peak() const { return peak_; }

 private:
  uint64_t current_ = 0;
  uint64_t peak_ = 0;
};

struct TierStats {
  uint64_t capacity_bytes = 0;
  uint64_t current_bytes = 0;  // frames held (host), slots used (NVMe)
  uint64_t peak_bytes = 0;
  uint64_t pinned_pages = 0;    // now
  uint64_t resident_pages = 0;  // pages with a valid copy here now
};

struct MemoryStats {
  // Indexed by Tier. The device entry stays zero: device residency is the scheduler's
  // (Note [Device residency]); the Device's own stats count its arena.
  TierStats tiers[kNumTiers];
  uint64_t nvme_read_bytes = 0;
  uint64_t nvme_write_bytes = 0;
  uint64_t hits = 0;  // acquires served by a copy already in the host pool
  uint64_t misses = 0;
  uint64_t evictions = 0;       // copies dropped to make room
  uint64_t write_backs = 0;     // dirty copies written to NVMe to make room (each page)
  uint64_t nvme_commits = 0;    // NVMe commits that committed at least one page version
  uint64_t forced_commits = 0;  // of those, the ones the manager made itself (not commit_nvme):
                                // eviction write-backs, freeing host frames held by staged
                                // versions, a write to a page whose version is staged
  uint64_t discards = 0;        // successful discard() calls
  uint64_t admission_waits = 0;
  uint64_t moved_bytes() const { return nvme_read_bytes + nvme_write_bytes; }
  const TierStats& tier(Tier t) const { return tiers[static_cast<int>(t)]; }
};

}  // namespace strata::memory
