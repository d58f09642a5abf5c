// Access plans: the known future of the host pool's pages, for Belady eviction.
//
// A plan is the ordered list of acquires of one training step, each tagged with the acquirer
// that makes it (the scheduler's driver, its optimizer, ...); steps repeat, so position p of the
// infinite sequence is entry p % size() of iteration p / size(). Acquirers run ahead of or
// behind each other (the optimizer finishes step s while the driver starts step s+1), so each
// follows its own cursor: an absolute position in that sequence, advanced by its own acquires
// (Note [Plan cursors] in eviction_policy.h). A page's next use is the earliest of its next
// uses by each acquirer from that acquirer's cursor.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "memory/page_plan.h"

namespace strata::memory {

// At most this many acquirers follow one plan (AcquireOptions::acquirer < kMaxAcquirers).
inline constexpr int kMaxAcquirers = 4;

// One entry of an access plan: `acquirer` will acquire `page`, in this order.
struct PlannedAccess {
  PageId page = 0;
  uint8_t acquirer = 0;
};

}  // namespace strata::memory

namespace strata::memory::internal {

// Immutable after construction; shared as shared_ptr<const AccessPlan>. Pure.
//
// Eviction asks for the next use of every resident candidate, for every acquirer, at every
// eviction (RankVictims). So the positions sit in one flat array indexed by (page, acquirer) —
// page ids are dense, 0..pages-1 — rather than a hash map: a query is two loads and a binary
// search over the page's few positions. With the map, its hash lookups were a quarter of the
// memory workers' CPU in bench offload's cost configuration (435-page pool; perf, 2026-11-25).
class AccessPlan {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  explicit AccessPlan(const std::vector<PlannedAccess>& plan);
  uint64_t size() const { return size_; }
  // The absolute position at or after `from` at which `acquirer` next acquires `page`; kNever
  // when it never does.
  uint64_t next_use(PageId page, int acquirer, uint64_t from) const;
  // The earliest next use of `page` by any acquirer, each from its cursor (kMaxAcquirers
  // entries).
  uint64_t next_use(PageId page, const uint64_t* cursors) const;

 private:
  static uint64_t key(PageId page, int acquirer) { return page * kMaxAcquirers + acquirer; }
  uint64_t size_ = 0;
  // The positions within one step at which acquirer a acquires page p, ascending, are
  // positions_[begin_[key(p, a)] .. begin_[key(p, a) + 1]); keys past begin_ have none.
  // 32 bits each (a plan holds fewer than 2^32 acquires; checked): a model of 4M pages
  // (the paged trainer's limit) costs 64 MiB of begin_ rather than 128.
  std::vector<uint32_t> begin_;
  std::vector<uint32_t> positions_;
};

}  // namespace strata::memory::internal
