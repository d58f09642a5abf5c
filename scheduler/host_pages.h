// HostPages: the Engine's door to the MemoryManager's host pool.
// - Every acquire names its acquirer, the driver or the optimizer, each with its own cursor in
//   the host tier's access plan (Note [Plan cursors] in memory/eviction_policy.h).
// - It learns that plan (Note [Host access plan]).
// - It keeps the pins of the pages whose home is the host (pinned for the whole run, unpinned
//   only while they are written: a writer is alone).
//
// Note [Host access plan]
// The host pool evicts Belady-style when it knows the order of a step's acquires. That order is
// static but depends on which blocks the device slots keep, so instead of deriving it the Engine
// records it: the acquires of one step (the driver's, then the optimizer's, each in its own
// order) become the plan, set before a later step. The driver's order does not depend on timing
// (SlotCache::choose_victim), nor does the optimizer's (one thread, updates in block order), so
// the recorded step is every step's. Eviction changes only what moves, never a value.
//
// Threads: Acquire and Release from any thread (recording and the pins take their own
// mutexes); set_homes, Record and take_plan from the driver.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "memory/memory_manager.h"

namespace strata::scheduler {

enum class Acquirer : uint8_t { kDriver = 0, kOptimizer = 1 };

class HostPages {
 public:
  explicit HostPages(memory::MemoryManager& mm) : mm_(mm) {}
  memory::MemoryManager& manager() { return mm_; }
  bool has_nvme() const { return mm_.options().nvme != nullptr; }

  // Pins `page` in the host pool for `acquirer` during `step` (blocking). A write to a page whose
  // home is the host first gives up its home pin (a writer is alone); Release puts it back.
  Result<memory::PageRef> acquire(memory::PageId page, memory::Access access, Acquirer acquirer,
                                  std::string holder, long step);
  // Releases `ref`, and pins its page again when its home is the host.
  Status release(memory::PageRef& ref);
  // Starts an NVMe read of `page` when there is an NVMe tier (best effort).
  void prefetch(memory::PageId page);

  // Records the acquires made for `step` (Note [Host access plan]); < 0: none.
  void record(long step) { recorded_step_.store(step, std::memory_order_release); }
  long recorded_step() const { return recorded_step_.load(std::memory_order_acquire); }
  // The recorded acquires as a plan (the driver's, then the optimizer's); stops recording.
  std::vector<memory::PlannedAccess> take_plan();

  // Pages whose home is the host: pinned now and kept pinned but while they are written.
  Status set_homes(const std::vector<memory::PageId>& pages);
  void release_homes();

 private:
  void unpin(memory::PageId page);
  Status repin(memory::PageId page);

  memory::MemoryManager& mm_;
  std::atomic<long> recorded_step_{-1};
  std::mutex record_mu_;
  std::vector<memory::PageId> recorded_[2];  // per Acquirer
  std::mutex pins_mu_;
  std::vector<memory::PageRef> pins_;  // indexed by page id; empty refs for other pages
  std::vector<bool> home_;             // the page's home is the host
};

}  // namespace strata::scheduler
