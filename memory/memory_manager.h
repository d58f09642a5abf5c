// MemoryManager: every page of model state in the one pinned host pool and on NVMe, under hard
// budgets. This is the public header of memory/ — its contract for the scheduler and for an
// embedder; docs/memory.md has the design notes.
//
// Note [Device residency]
// Device memory is not the manager's. Kernels need contiguous tensors and a page boundary may
// cut a tensor, so the scheduler keeps whole blocks in device *slots* (scheduler/slot_cache.h),
// filled from and drained to the host pages that this manager holds. One mechanism decides what
// is resident on the device: the slot cache, Belady over the step program. (Until 2026-11-25 the
// manager also had device frames with their own Belady plan that only tests and a benchmark
// used; they went.)
//
// Pages and tiers
// - Page ids are 0 .. num_pages-1 (a PagePlan gives them). Every page is page_bytes long. A page
//   nobody has written yet reads as zeros.
// - The host pool: one pinned allocation of host_bytes, cut into page frames, registered with
//   the Device (register_host) and with the NVMe tier's I/O engine (fixed buffers).
// - The NVMe tier (NvmeTier, optional): copy-on-write page versions; its own capacity is its
//   budget. Without it the host pool is the last tier and must hold every page written.
// - Per page the manager keeps one state (Note [Page states] in memory/page_table.h): zero, on
//   NVMe, loading, clean, dirty, being staged, staged (written to NVMe, not yet committed).
//
// Acquire and release: acquire() pins a page in the host pool (readers, or one writer), loading
// it from NVMe first when needed; the PageRef's destruction releases the pin. Two requests for
// one page share one load.
//
// Eviction (only unpinned pages that are not moving; dirty copies are written back first):
// Belady over an access plan (set_access_plan; one cursor per acquirer, Note [Plan cursors] in
// memory/eviction_policy.h), else LRU steered by demote(). Dirty copies are written to NVMe in
// groups that share one commit (Note [Grouped write-back] in memory/write_back.cc):
// MemoryStats::write_backs counts pages written back, forced_commits the commits this takes.
//
// Discard: discard(page) declares a page's contents dead (a gradient page after the optimizer
// consumed it). Its copy is dropped without a write-back, and the page reads as zeros again;
// nothing of it is written to NVMe afterwards (until it is written again). A version already
// committed stays in the store (a reopened store still has it); the manager no longer reads it.
//
// Budgets and stalls: a request that needs a frame when every frame is pinned or moving waits
// for a release. A request that sees no progress for options.stall_timeout_ms fails with
// Timeout; the message (also logged) lists who holds which pinned page. Errors a larger budget
// would avoid carry a BudgetShortfall (memory/budget_shortfall.h) as their Status detail, so
// that the caller can word them: memory/ knows no command-line flag.
//
// Threads and locking (Note [Locking] in memory_manager.cc): every public method may be called
// from any thread. No global lock on the hot path: a hit locks that page's mutex only. No
// mutex is held across an I/O, a commit or a wait. Misses run on an elastic pool of worker
// threads (up to options.max_workers), so futures complete even when every caller thread is
// blocked waiting on one of them.
// Ownership: the Device and NvmeTier are borrowed and must outlive the manager. Every PageRef
// must be released (destroyed) before the manager is destroyed (checked).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "memory/access.h"
#include "memory/access_plan.h"
#include "memory/budget_shortfall.h"
#include "memory/eviction_policy.h"
#include "memory/memory_options.h"
#include "memory/memory_stats.h"
#include "memory/nvme_tier.h"
#include "memory/page_plan.h"
#include "memory/tier.h"

namespace strata::memory {

namespace internal {
struct ManagerState;
}  // namespace internal

struct AcquireOptions {
  // Names the holder in stall reports ("fwd block 3"); defaults to the calling thread's id.
  std::string holder;
  // Whose cursor the acquire advances in the access plan (Note [Plan cursors]).
  uint8_t acquirer = 0;
};

// Where a page's copies are (diagnostics and tests), indexed by Tier (the device entry is
// always false: Note [Device residency]).
struct PageResidency {
  bool valid[kNumTiers] = {false, false, false};
  bool nvme_staged = false;  // the host copy is the buffer of a staged, uncommitted version
  int readers = 0;
  bool writer = false;
  bool busy = false;       // being loaded or written to NVMe
  const char* state = "";  // the page's state (Note [Page states])
};

class MemoryManager;

// A pinned host copy of one page. Move-only; releases the pin when destroyed (or by release()).
// data() is valid until the release. Use from one thread at a time.
class PageRef {
 public:
  PageRef() = default;
  PageRef(PageRef&& other) noexcept { *this = std::move(other); }
  PageRef& operator=(PageRef&& other) noexcept;
  PageRef(const PageRef&) = delete;
  PageRef& operator=(const PageRef&) = delete;
  ~PageRef() { release(); }

  explicit operator bool() const { return manager_ != nullptr; }
  PageId page() const { return page_; }
  Access access() const { return access_; }
  void* data() const { return data_; }
  uint64_t bytes() const;
  void release();

 private:
  friend class MemoryManager;
  PageRef(MemoryManager* manager, PageId page, Access access, void* data)
      : manager_(manager), page_(page), access_(access), data_(data) {}
  MemoryManager* manager_ = nullptr;
  PageId page_ = 0;
  Access access_ = Access::kRead;
  void* data_ = nullptr;
};

class MemoryManager {
 public:
  // Validates options and allocates the host pool. A host pool below one page is
  // ResourceExhausted with a BudgetShortfall; other bad options are InvalidArgument.
  static Result<std::unique_ptr<MemoryManager>> Create(const MemoryManagerOptions& options);
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  const MemoryManagerOptions& options() const;
  uint64_t page_bytes() const;
  uint64_t host_frames() const;  // the pool's capacity in pages

  // Pins `page` in the host pool, loading it first when needed. The future is ready at once on
  // a hit. Errors: InvalidArgument (bad page), Timeout (stall, with the report), IoError /
  // Corruption from the NVMe tier.
  std::future<Result<PageRef>> acquire(PageId page, Access access,
                                       const AcquireOptions& options = {});
  // acquire(...).get(): blocks the calling thread.
  Result<PageRef> acquire_sync(PageId page, Access access, const AcquireOptions& options = {});

  // Best effort, asynchronous: loads `page` into the pool if that needs no waiting and (under
  // Belady) evicts nothing needed sooner. Never pins. Errors are logged at debug.
  void prefetch(PageId page);
  // A hint: the caller will not need `page` for a long while (AdamW's moments after their
  // update). Under LRU its copy becomes the oldest, the first to go when room is needed; with
  // an access plan (Belady) the plan already knows and the hint changes nothing.
  // InvalidArgument for a bad page.
  [[nodiscard]] Status demote(PageId page);
  // Waits until every prefetch issued so far has finished (tests, benchmarks).
  void drain_prefetches();

  // A frame of the pool outside any page: a caller's scratch inside the host budget (layer-
  // major's boundary activations, scheduler/boundary_store.h), taken like a miss's frame
  // (evicting, writing dirty copies back) and counted in the pool's in-use bytes and peak until
  // give_back_frame. Errors as a miss's: Timeout with the stall report when nothing can be freed.
  // Threads: any.
  Result<void*> borrow_frame();
  void give_back_frame(void* frame);

  // Stages every listed page whose host copy is dirty on NVMe; commit_nvme() makes them
  // durable. Waits while a page is pinned for write or moving. FailedPrecondition without NVMe.
  [[nodiscard]] Status flush(std::span<const PageId> pages);
  [[nodiscard]] Status flush_all();
  // Commits every staged NVMe version in one batch. FailedPrecondition without an NVMe tier.
  [[nodiscard]] Status commit_nvme();
  // Declares the contents of `page` dead (see the header comment); afterwards it reads as
  // zeros, like a page nobody wrote (the next writer typically acquires it with kOverwrite).
  // Waits while the page is pinned or moving: the caller must not hold a pin on it itself
  // (that wait ends in Timeout with the stall report). Errors: InvalidArgument, Timeout.
  [[nodiscard]] Status discard(PageId page);
  // Writes back and drops every unpinned host copy (tests, benchmarks: the next acquire comes
  // from NVMe). FailedPrecondition for dirty pages without an NVMe tier.
  [[nodiscard]] Status evict_all();

  // The order of one step's acquires (with their acquirers); replaces any previous plan and
  // resets every cursor.
  void set_access_plan(std::vector<PlannedAccess> plan);
  void set_plan_position(uint64_t position);

  // Snapshots (checkpoints) of the NVMe tier: save_snapshot flushes and commits `pages`, then
  // durably records every page's committed version under `name`, replacing a snapshot of that
  // name. FailedPrecondition without an NVMe tier; the tier's errors otherwise.
  [[nodiscard]] Status save_snapshot(const std::string& name, std::span<const PageId> pages);
  Result<std::vector<std::string>> snapshot_names() const;
  [[nodiscard]] Status delete_snapshot(const std::string& name);

  MemoryStats stats() const;
  PageResidency residency(PageId page) const;
  // Who holds what: every pinned or moving page (first 64) and the pool's frames. Takes each
  // page's mutex in turn; callable from any thread, also while holding PageRefs.
  std::string stall_report() const;

 private:
  friend class PageRef;
  explicit MemoryManager(std::unique_ptr<internal::ManagerState> state);
  Result<void*> load_and_pin(PageId page, Access access, const std::string& holder, bool pin);
  void release(PageId page, Access access);
  Status check_page(PageId page, const char* what) const;
  std::unique_ptr<internal::ManagerState> m_;
};

}  // namespace strata::memory
