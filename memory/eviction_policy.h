// Eviction policies of the host pool: which resident page gives up its frame first.
//
// - kBelady, with an access plan (MemoryManager::set_access_plan): the page whose next use is
//   farthest goes first. Prefetches never evict a page needed no later than the page they bring.
// - kLru, or kBelady without a plan: the least recently pinned or released page goes first; a
//   page demoted by MemoryManager::demote (its last use set to 0) goes before all the others.
//
// Note [Plan cursors]
// Each acquirer of a plan (AcquireOptions::acquirer) has its own cursor, an absolute position
// in the repeating plan. An acquire of page p by acquirer a moves a's cursor just past the next
// position at which a acquires p (if that lies within one step of the cursor: an unplanned
// acquire moves nothing). A page's next use is the earliest over the acquirers of its next use
// from each one's cursor. With one shared position (the manager before 2026-11-25) the driver,
// a step ahead, dragged the optimizer's future along with it: pages the optimizer was about to
// read looked a whole step away and were evicted first (docs/memory.md has the measurements).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "memory/access_plan.h"
#include "memory/page_table.h"

namespace strata::memory {

enum class EvictionPolicy : uint8_t { kBelady, kLru };

}  // namespace strata::memory

namespace strata::memory::internal {

// Eviction candidates in victim order, sorted only as far as the caller reads: an eviction
// mostly takes one of the first few, and sorting a large pool's whole resident set for every
// frame (a 24 GiB pool of 1 MiB pages holds 24k) cost more than the eviction. Each read past the
// sorted prefix extends it by partial_sort, at least doubling it. Order: higher score first,
// then lower page id.
class VictimOrder {
 public:
  explicit VictimOrder(std::vector<std::pair<uint64_t, PageId>> scored) : v_(std::move(scored)) {}
  size_t size() const { return v_.size(); }
  PageId operator[](size_t i);

 private:
  std::vector<std::pair<uint64_t, PageId>> v_;
  size_t sorted_ = 0;
};

// The plan in force and one cursor per acquirer. Lock-free on the hot path: the plan in force is
// an atomic pointer read on every acquire (acquire/release). Plans are set rarely (the scheduler
// sets one per run), so a replaced plan is kept, not freed, until the PlanCursors go: a reader
// may still hold it, and no reference count (GCC 12's atomic<shared_ptr> takes a lock bit that
// ThreadSanitizer cannot see) is needed. Cursors only move forward (relaxed: a cursor a little
// behind makes an eviction choice a little worse, never wrong).
class PlanCursors {
 public:
  void set_plan(std::vector<PlannedAccess> plan);
  // The plan in force, or nullptr; valid while the PlanCursors live.
  const AccessPlan* plan() const { return plan_.load(std::memory_order_acquire); }
  // Note [Plan cursors]: `acquirer` acquired `page`.
  void advance(PageId page, int acquirer);
  void set_position(uint64_t position);  // every cursor
  // The earliest next use of `page` over the acquirers (AccessPlan::kNever without a plan).
  uint64_t next_use(PageId page) const;
  void snapshot(uint64_t* cursors) const;

 private:
  std::atomic<const AccessPlan*> plan_{nullptr};
  std::mutex plans_mu_;                                   // guards plans_ (set_plan only)
  std::vector<std::unique_ptr<const AccessPlan>> plans_;  // every plan set, the last in force
  std::atomic<uint64_t> cursor_[kMaxAcquirers] = {};
};

struct Ranking {
  VictimOrder order;
  bool planned = false;  // Belady order (from a plan), not recency
  size_t demoted = 0;    // recency order: how many demoted copies lead it
};

// Ranks `candidates` (pages resident in the pool). `not_needed_before` (a prefetch's own next
// use, or 0) drops the candidates needed no later than it.
Ranking RankVictims(const std::vector<PageId>& candidates, const PageTable& pages,
                    EvictionPolicy policy, const PlanCursors& cursors, uint64_t not_needed_before);

}  // namespace strata::memory::internal
