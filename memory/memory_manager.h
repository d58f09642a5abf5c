// MemoryManager: every page of model state, its copies on the device, in the one pinned host
// pool and on NVMe, under hard budgets. This is the public header of memory/; see
// docs/memory.md for the design notes.
//
// Pages and tiers
// - Page ids are 0 .. num_pages-1 (a PagePlan gives them). Every page is page_bytes long. A page
//   nobody has written yet reads as zeros.
// - Tier::kDevice: frames allocated from the Device arena (at most budgets.device_bytes).
//   Tier::kHost: one pinned pool of budgets.host_bytes, allocated once, registered with the
//   Device (register_host) and with the NVMe tier's I/O engine (fixed buffers).
//   Tier::kNvme: the NvmeTier (copy-on-write page versions; its own capacity is the budget).
//   Pages are acquired on the device or the host; NVMe holds copies only.
// - Per page the manager tracks which tiers hold a valid copy, the pins (readers or one
//   writer), whether a move is in flight, and whether its NVMe version is staged (written but
//   not committed). A copy is dirty when no other tier holds a valid copy: dropping it needs a
//   write-back to the next tier down (device -> host -> NVMe) first.
//
// Moves: host<->device on the Device's H2D / D2H streams (one each), host<->NVMe through the
// NvmeTier, device<->NVMe staged through a host frame (which stays as a clean host copy). Two
// requests for one page share one move: the second waits for the first to finish.
//
// Eviction (only unpinned pages with no move in flight; dirty copies are written back first):
// - Belady: with an access plan (set_access_plan), the page whose next use on that tier is
//   farthest goes first. The plan is the order of one step and repeats; the plan position
//   advances by itself as acquires follow it (or set_plan_position). Prefetches never evict a
//   page that is needed sooner than the page they bring in.
// - LRU otherwise (no plan, or policy kLru).
// - A host copy whose NVMe version is staged cannot be dropped until the batch is committed;
//   when only such copies are left, the manager commits the batch itself (counted in
//   MemoryStats::forced_commits).
// - Dirty host copies are written back to NVMe without a commit each (a commit is one fdatasync
//   + one synchronous RocksDB batch): the manager stages dirty victims and one commit covers
//   several. In recency order (LRU, or no plan) the run of dirty victims at the front of the
//   order (up to options.write_back_batch_pages / _bytes) is staged and committed together and
//   the rest of the run stays resident as clean copies, dropped later without I/O. Under a
//   plan only the victim itself is staged and the request takes a clean copy instead
//   (write-behind); the staged frames are freed by a later commit, at the latest when a
//   quarter of the host pool (or the batch limit) is staged or nothing else is droppable. So N
//   dirty evictions cost far fewer than N commits. MemoryStats::write_backs counts pages
//   written back, forced_commits the commits this takes (Note [Grouped write-back]).
//
// Discard: discard(page) declares a page's contents dead (a gradient page after the optimizer
// consumed it). Every copy is dropped without a write-back, and the page reads as zeros again,
// like a page nobody wrote; nothing of it is written to NVMe afterwards (until it is written
// again). A version already committed to the NvmeTier stays in the store (a reopened store still
// has it); the manager just no longer reads it.
//
// Admission and stalls: a request that needs a frame when every frame is pinned or in flight
// waits for a release. acquire_all() fails at once (ResourceExhausted, with the numbers and the
// flag to raise) when its pages cannot fit in a tier even with nothing else resident. A request
// that sees no progress anywhere in the manager for options.stall_timeout_ms fails with
// Timeout; the message (also logged) lists who holds which pinned page.
//
// Threads and locking rule (Note [Locking] in memory_manager.cc):
// - Every public method may be called from any thread. There is no global lock on the hot
//   path: each page has its own mutex (acquire hit = lock that page, pin, unlock); each frame
//   pool (device, host) has its own mutex guarding its free list and resident set.
// - Lock order: page mutex -> pool mutex. A pool mutex is never held while a page mutex is
//   taken; at most one page mutex is held at a time; no mutex is held across a move, an I/O or
//   a wait for another page.
// - Misses run on an elastic pool of worker threads (grown up to options.max_workers), so the
//   futures complete even when every caller thread is blocked waiting on one of them.
// Ownership: the Device and NvmeTier are borrowed and must outlive the manager. Every PageRef
// must be released (destroyed) before the manager is destroyed (checked).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/util/status.h"
#include "memory/nvme_tier.h"
#include "memory/page_plan.h"

namespace strata::memory {

enum class Tier : uint8_t { kDevice = 0, kHost = 1, kNvme = 2 };
inline constexpr int kNumTiers = 3;
const char* TierName(Tier tier);  // "device", "host", "nvme"

enum class Access : uint8_t {
  kRead,       // contents are loaded; the caller must not modify them
  kWrite,      // contents are loaded; the caller modifies them (other copies become stale)
  kOverwrite,  // the caller overwrites every byte; nothing is loaded (contents undefined)
};

enum class EvictionPolicy : uint8_t { kBelady, kLru };

struct MemoryBudgets {
  uint64_t device_bytes = 0;  // --gpu-mem (page frames only)
  uint64_t host_bytes = 0;    // --host-mem: the pinned pool
};

struct MemoryManagerOptions {
  uint64_t page_bytes = kDefaultPageBytes;  // power of two, >= 4 KiB
  uint64_t num_pages = 0;
  MemoryBudgets budgets;
  Device* device = nullptr;  // borrowed; nullptr: no device tier
  NvmeTier* nvme = nullptr;  // borrowed; nullptr: no NVMe tier (host is the last tier)
  EvictionPolicy policy = EvictionPolicy::kBelady;
  uint64_t stall_timeout_ms = 30'000;
  uint32_t max_workers = 64;
  // Eviction write-backs to NVMe share commits (see the header comment): at most this many
  // pages, and at most this many bytes (always at least one page), are staged for one commit.
  // Bigger batches mean fewer commits (one fdatasync + one RocksDB write each) but may write
  // back a page that is written again before it is evicted; 1 commits every write-back alone
  // (InvalidArgument when 0). Each staged page holds an NVMe slot until the commit
  // (copy-on-write); when the tier has no free slot the manager commits what is staged and
  // goes on.
  uint64_t write_back_batch_pages = 64;
  uint64_t write_back_batch_bytes = 256 * kMiB;
};

// One entry of an access plan: the page will be acquired on that tier, in this order.
struct PlannedAccess {
  PageId page = 0;
  Tier tier = Tier::kDevice;
};

struct AcquireOptions {
  // Names the holder in stall reports ("fwd block 3"); defaults to the calling thread's id.
  std::string holder;
};

struct PageRequest {
  PageId page = 0;
  Tier tier = Tier::kDevice;
  Access access = Access::kRead;
};

struct TierStats {
  uint64_t capacity_bytes = 0;
  uint64_t current_bytes = 0;  // frames held (device: allocated from the arena)
  uint64_t peak_bytes = 0;
  uint64_t pinned_pages = 0;    // now
  uint64_t resident_pages = 0;  // pages with a valid copy here now
};

struct MemoryStats {
  TierStats tiers[kNumTiers];
  uint64_t h2d_bytes = 0;
  uint64_t d2h_bytes = 0;
  uint64_t nvme_read_bytes = 0;
  uint64_t nvme_write_bytes = 0;
  uint64_t hits = 0;  // acquires served by a copy already on the tier
  uint64_t misses = 0;
  uint64_t evictions = 0;       // copies dropped to make room
  uint64_t write_backs = 0;     // dirty copies written one tier down to make room (each page)
  uint64_t nvme_commits = 0;    // NVMe commits that committed at least one page version
  uint64_t forced_commits = 0;  // of those, the ones the manager made itself (not commit_nvme):
                                // eviction write-backs, freeing host frames held by staged
                                // versions, a write to a page whose version is staged
  uint64_t discards = 0;        // successful discard() calls
  uint64_t admission_waits = 0;
  uint64_t moved_bytes() const {
    return h2d_bytes + d2h_bytes + nvme_read_bytes + nvme_write_bytes;
  }
};

// Where a page's copies are (diagnostics and tests).
struct PageResidency {
  bool valid[kNumTiers] = {false, false, false};
  bool nvme_staged = false;  // the page's current contents are staged (not a discarded version)
  int readers = 0;
  bool writer = false;
  bool busy = false;
};

class MemoryManager;

// A pinned copy of one page on one tier. Move-only; releases the pin when destroyed (or by
// release()). data() is a device pointer for Tier::kDevice and a host pointer for kHost; it is
// valid until the release. Use from one thread at a time.
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
  Tier tier() const { return tier_; }
  Access access() const { return access_; }
  void* data() const { return data_; }
  uint64_t bytes() const;
  void release();

 private:
  friend class MemoryManager;
  PageRef(MemoryManager* manager, PageId page, Tier tier, Access access, void* data)
      : manager_(manager), page_(page), tier_(tier), access_(access), data_(data) {}
  MemoryManager* manager_ = nullptr;
  PageId page_ = 0;
  Tier tier_ = Tier::kHost;
  Access access_ = Access::kRead;
  void* data_ = nullptr;
};

class MemoryManager {
 public:
  // Validates options and allocates the host pool. Budget errors are ResourceExhausted and say
  // which flag to raise: "--host-mem 1 MiB is below one page (16 MiB); raise --host-mem to at
  // least 16M or lower --page-size". Other bad options are InvalidArgument.
  static Result<std::unique_ptr<MemoryManager>> Create(const MemoryManagerOptions& options);
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  const MemoryManagerOptions& options() const;
  uint64_t page_bytes() const;

  // Pins `page` on `tier` (kDevice or kHost), moving it there first when needed. The future
  // is ready at once on a hit. Errors: InvalidArgument (bad page or tier), Timeout (stall,
  // with the report), IoError/Corruption from the NVMe tier, Internal from a failed copy.
  std::future<Result<PageRef>> acquire(PageId page, Tier tier, Access access,
                                       const AcquireOptions& options = {});
  // acquire(...).get(): blocks the calling thread.
  Result<PageRef> acquire_sync(PageId page, Tier tier, Access access,
                               const AcquireOptions& options = {});
  // Pins every request (one page appears at most once) or none. Fails at once with
  // ResourceExhausted when the requests for one tier exceed its capacity.
  std::future<Result<std::vector<PageRef>>> acquire_all(std::vector<PageRequest> requests,
                                                        const AcquireOptions& options = {});

  // Best effort, asynchronous: brings a copy of `page` to `tier` if that needs no waiting and
  // (under Belady) evicts nothing needed sooner. Never pins. Errors are logged at debug.
  void prefetch(PageId page, Tier tier);
  // A hint: the caller will not need `page` on `tier` for a long while (AdamW's moments after
  // their update). Under LRU its copy becomes the oldest, the first to go when room is needed,
  // ahead of pages that are older but still to be used; with an access plan (Belady) the plan
  // already knows and the hint changes nothing. No effect on a pinned copy until it is released.
  // InvalidArgument for a bad page or tier.
  [[nodiscard]] Status demote(PageId page, Tier tier);
  // Waits until every prefetch issued so far has finished (tests, benchmarks).
  void drain_prefetches();

  // Writes every listed page that has no valid NVMe copy down to NVMe (through the host) and
  // stages its new version; commit_nvme() makes them durable. Waits for pins for write.
  [[nodiscard]] Status flush(std::span<const PageId> pages);
  [[nodiscard]] Status flush_all();
  // Commits every staged NVMe version in one batch (one PageStore commit). FailedPrecondition
  // when there is no NVMe tier.
  [[nodiscard]] Status commit_nvme();
  // Declares the contents of `page` dead: drops its device and host copies (frames go back to
  // their pools) and its NVMe copy without writing anything back; afterwards the page reads as
  // zeros, exactly like a page nobody wrote (the next writer typically acquires it with
  // Access::kOverwrite). Works with or without an NVMe tier.
  // Waits, like flush(), while the page is pinned (readers or a writer) or a move is in flight,
  // then discards it: the caller must not hold a pin on the page itself (that wait ends in
  // Timeout after options.stall_timeout_ms, with the stall report). A version of the page that
  // is staged but not yet committed never becomes valid again: the next commit completes it
  // (the tier cannot take a write back) but the manager ignores it and only then reuses its
  // host frame. Errors: InvalidArgument (bad page id), Timeout.
  [[nodiscard]] Status discard(PageId page);
  // Drops every unpinned copy on `tier` (writing back dirty ones). Tests and benchmarks use it
  // to make the next acquire come from a lower tier.
  [[nodiscard]] Status evict_all(Tier tier);

  // Returns the device frames the manager holds but no page uses to the Device arena (frames are
  // otherwise kept for reuse), e.g. before a phase that needs arena room for activations.
  // Returns the bytes given back.
  uint64_t trim_device();

  // The order of one step's acquires; replaces any previous plan and resets the position.
  void set_access_plan(std::vector<PlannedAccess> plan);
  void set_plan_position(uint64_t position);

  MemoryStats stats() const;
  PageResidency residency(PageId page) const;
  // Who holds what: every pinned, moving or frame-waiting page (first 64) and each tier's frames.
  // Takes each page's mutex in turn; callable from any thread, also while holding PageRefs.
  std::string stall_report() const;

  struct Impl;

 private:
  friend class PageRef;
  explicit MemoryManager(std::unique_ptr<Impl> impl);
  void release(PageId page, Tier tier, Access access);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::memory
