// ManagerState (internal to memory/): what the parts of the MemoryManager share — the options,
// the page table, the host pool, the write-back, the plan cursors, the counters and the worker
// threads that run misses. The facade (memory_manager.cc) owns it; the frame source
// (frame_source.cc) and the stall report (stall_report.cc) work on it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/util/log.h"
#include "memory/eviction_policy.h"
#include "memory/host_frame_pool.h"
#include "memory/manager_counters.h"
#include "memory/memory_options.h"
#include "memory/page_table.h"
#include "memory/worker_pool.h"
#include "memory/write_back.h"

namespace strata::memory::internal {

// Waiters re-check their condition at least this often (Note [Progress and stalls]).
inline constexpr auto kWaitSlice = std::chrono::milliseconds(20);

class StallClock {
 public:
  explicit StallClock(uint64_t timeout_ms)
      : timeout_(std::chrono::milliseconds(timeout_ms)), start_(std::chrono::steady_clock::now()) {}
  bool expired() const { return std::chrono::steady_clock::now() - start_ >= timeout_; }

 private:
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point start_;
};

struct ManagerState {
  ManagerState(const MemoryManagerOptions& o, std::unique_ptr<HostFramePool> host_pool)
      : opt(o),
        page_bytes(o.page_bytes),
        pages(o.num_pages),
        pool(std::move(host_pool)),
        write_back(o.nvme, pages, *pool, counters) {}

  const MemoryManagerOptions opt;
  const uint64_t page_bytes;
  PageTable pages;
  std::unique_ptr<HostFramePool> pool;
  Counters counters;
  WriteBack write_back;
  PlanCursors cursors;
  // Note [Grouped write-back]: pages per group write-back, and the staged pages at which
  // write-behind commits.
  uint64_t group_pages = 1;
  uint64_t behind_pages = 1;
  std::shared_ptr<spdlog::logger> log = Logger("memory");
  // Prefetches submitted and not finished (drain_prefetches waits for 0).
  std::mutex prefetch_mu;
  std::condition_variable prefetch_cv;
  uint64_t prefetches = 0;
  std::unique_ptr<WorkerPool> workers;
};

}  // namespace strata::memory::internal
