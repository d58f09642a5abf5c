// The budget and traffic counters that every Device backend keeps, and how they become
// DeviceStats: one definition for the sim and CUDA backends (which differ in how they allocate
// and copy, not in what they count).
//
// Threads: ArenaCounters is plain data guarded by the owning backend's arena mutex (held for
// write in alloc/free, for read in stats). CopyCounters are relaxed atomics, safe anywhere.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "core/device/device.h"
#include "core/util/sizes.h"

namespace strata {

struct ArenaCounters {
  uint64_t capacity = 0;  // the hard budget
  uint64_t current = 0;   // rounded bytes allocated now
  uint64_t peak = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;

  bool fits(uint64_t rounded) const { return rounded <= capacity - current; }
  void on_alloc(uint64_t rounded) {
    current += rounded;
    peak = std::max(peak, current);
    ++allocs;
  }
  void on_free(uint64_t rounded) {
    current -= rounded;
    ++frees;
  }
  // For refusals: "12.00 MiB (12582912 bytes) in use of the 16.00 MiB (16777216 bytes)".
  std::string in_use() const {
    return FormatBytes(current) + " (" + std::to_string(current) + " bytes) in use of the " +
           FormatBytes(capacity) + " (" + std::to_string(capacity) + " bytes)";
  }
  void fill(DeviceStats& s) const {
    s.capacity_bytes = capacity;
    s.current_bytes = current;
    s.peak_bytes = peak;
    s.alloc_count = allocs;
    s.free_count = frees;
  }
};

class CopyCounters {
 public:
  std::atomic<uint64_t>& of(CopyKind kind) {
    return kind == CopyKind::kHostToDevice   ? h2d_
           : kind == CopyKind::kDeviceToHost ? d2h_
                                             : d2d_;
  }
  void fill(DeviceStats& s) const {
    s.h2d_bytes = h2d_.load(std::memory_order_relaxed);
    s.d2h_bytes = d2h_.load(std::memory_order_relaxed);
    s.d2d_bytes = d2d_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> h2d_{0}, d2h_{0}, d2d_{0};
};

}  // namespace strata
