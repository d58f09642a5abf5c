// PageTable (internal to memory/): the state of every page in the host pool and on NVMe, one
// explicit state per page with named transitions (Note [Page states]).
//
// Note [Page states]
// What a page's contents are and where they live is one PageState:
//
//                      acquire miss                 filled (NVMe read / zeros)
//     kZero ─────────┐                ┌──────────────────────────────────────────► kClean
//     kOnNvme ───────┴──► kLoading ───┤ failed: back where it came from              │  ▲
//                                     └────────────────────────────────────────────  │  │
//                                                                                     │  │
//     kClean ── pin for write ──► kDirty ── write-back / flush ──► kStaging ──► kStaged
//        │                          ▲            (stage_write runs)   │ failed      │  │
//        │ evict (no I/O)           └─────────────────────────────────┘             │  │
//        ▼                          ▲                        commit failed           │  │
//     kZero or kOnNvme              └────────────────────────────────────────────────┘  │
//                                                              commit done: kClean ─────┘
//     discard: kClean, kDirty, kStaged, kOnNvme ──► kZero (a staged buffer stays held)
//
// - kZero: no copy anywhere; the page reads as zeros (never written, or discarded).
// - kOnNvme: no host copy; the committed NVMe version is current.
// - kLoading: one thread is bringing a host copy in (taking a frame, then reading NVMe or
//   zero-filling it). Nobody else pins, evicts or moves the page meanwhile.
// - kClean: a host copy equal to what the page reads as without it (the NVMe version when
//   nvme_current, else zeros): dropped without I/O.
// - kDirty: a host copy that is the only current version: it reaches NVMe before its frame is
//   reused.
// - kStaging: one thread is staging the dirty host copy (NvmeTier::stage_write runs).
// - kStaged: the host copy is the buffer of a staged, uncommitted NVMe version: it stays
//   unchanged and resident (readers only) until the commit makes the page kClean.
// A discarded page whose version was staged keeps that buffer as `staged_dead_frame` until the
// commit returns it to the pool, and no new version of the page is staged before then (one
// staged version per page): the page itself is kZero and may be written again meanwhile.
// Pins (readers, or one writer) are allowed in kClean and kDirty, readers also in kStaged and
// kStaging (a flush stages under readers). A pinned page is never evicted or discarded.
//
// Locking: each entry's mutex guards its fields (last_use is an atomic read without it); the
// transitions below expect it held. At most one page mutex is held at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memory/access.h"
#include "memory/page_plan.h"

namespace strata::memory::internal {

enum class PageState : uint8_t {
  kZero,
  kOnNvme,
  kLoading,
  kClean,
  kDirty,
  kStaging,
  kStaged,
};
const char* PageStateName(PageState state);

// Who pins a page, for stall reports.
struct Holder {
  std::string name;
  Access access;
};

struct PageEntry {
  std::mutex mu;
  std::condition_variable cv;
  PageState state = PageState::kZero;
  bool nvme_current = false;  // the committed NVMe version is the contents (kOnNvme, kClean)
  void* frame = nullptr;      // the host copy (kClean, kDirty, kStaging, kStaged; kLoading once
                              // a frame was taken)
  void* staged_dead_frame = nullptr;  // see Note [Page states]
  int readers = 0;
  bool writer = false;
  std::vector<Holder> holders;
  std::atomic<uint64_t> last_use{0};  // LRU tick of the last pin or release; 0: demoted

  bool resident() const {
    return state == PageState::kClean || state == PageState::kDirty ||
           state == PageState::kStaging || state == PageState::kStaged;
  }
  // kLoading or kStaging: one thread moves the page; everyone else waits.
  bool moving() const { return state == PageState::kLoading || state == PageState::kStaging; }
  bool pinned() const { return readers > 0 || writer; }
  // A new pin of this kind may be taken now (the page is resident and not moving).
  bool can_pin(Access access) const;

  // ---- transitions (Note [Page states]); each checks its source state ----
  // kZero/kOnNvme -> kLoading. Returns whether the contents must be read from NVMe.
  bool begin_load();
  // kLoading -> kClean with `host_frame` filled; or back to kZero/kOnNvme without a frame.
  void finish_load(void* host_frame);
  void abort_load();
  // kClean/kDirty: a pin; a write pin makes the copy the only current version (kDirty).
  void pin(Access access, std::string holder, uint64_t tick);
  void unpin(Access access, uint64_t tick);
  // kClean -> kZero/kOnNvme; returns the host frame.
  void* drop_clean();
  // kDirty -> kStaging -> kStaged, or back to kDirty when staging failed.
  void begin_stage();
  void finish_stage(bool ok);
  // kStaged -> kClean (committed) or kDirty (the commit failed).
  void finish_commit(bool ok);
  // Any state but the moving ones, unpinned -> kZero. Returns the host frame to give back to
  // the pool now (nullptr when there is none, or when it is a staged buffer kept until the
  // commit).
  void* discard();
  // Whether a dirty copy may be staged now (no dead version of it is staged).
  bool can_stage() const { return state == PageState::kDirty && staged_dead_frame == nullptr; }
};

// Every page's entry, indexed by PageId. Fixed size; entries never move.
class PageTable {
 public:
  explicit PageTable(uint64_t num_pages)
      : size_(num_pages), entries_(std::make_unique<PageEntry[]>(num_pages)) {}
  uint64_t size() const { return size_; }
  PageEntry& operator[](PageId page) { return entries_[page]; }
  const PageEntry& operator[](PageId page) const { return entries_[page]; }

 private:
  uint64_t size_;
  std::unique_ptr<PageEntry[]> entries_;
};

}  // namespace strata::memory::internal
