#include "memory/access_plan.h"

#include <algorithm>

#include "core/util/check.h"

namespace strata::memory::internal {

AccessPlan::AccessPlan(const std::vector<PlannedAccess>& plan) : size_(plan.size()) {
  // Counting sort by key: count, prefix sums, then place each position; positions are placed
  // in plan order, so each key's run ascends.
  STRATA_CHECK(plan.size() < (uint64_t{1} << 32)) << "a plan of " << plan.size() << " acquires";
  uint64_t keys = 0;
  for (const PlannedAccess& a : plan) {
    STRATA_CHECK(a.acquirer < kMaxAcquirers) << "acquirer " << int(a.acquirer);
    keys = std::max(keys, key(a.page, a.acquirer) + 1);
  }
  begin_.assign(keys + 1, 0);
  for (const PlannedAccess& a : plan) ++begin_[key(a.page, a.acquirer) + 1];
  for (uint64_t k = 0; k < keys; ++k) begin_[k + 1] += begin_[k];
  positions_.resize(plan.size());
  std::vector<uint32_t> next(begin_.begin(), begin_.end() - 1);
  for (uint64_t i = 0; i < plan.size(); ++i) {
    positions_[next[key(plan[i].page, plan[i].acquirer)]++] = static_cast<uint32_t>(i);
  }
}

uint64_t AccessPlan::next_use(PageId page, int acquirer, uint64_t from) const {
  const uint64_t k = key(page, acquirer);
  if (size_ == 0 || k + 1 >= begin_.size()) return kNever;
  const auto first = positions_.begin() + static_cast<std::ptrdiff_t>(begin_[k]);
  const auto last = positions_.begin() + static_cast<std::ptrdiff_t>(begin_[k + 1]);
  if (first == last) return kNever;
  const uint64_t iteration = from / size_;
  const uint64_t offset = from % size_;
  auto p = std::lower_bound(first, last, static_cast<uint32_t>(offset));
  if (p != last) return iteration * size_ + *p;
  return (iteration + 1) * size_ + *first;
}

uint64_t AccessPlan::next_use(PageId page, const uint64_t* cursors) const {
  uint64_t best = kNever;
  for (int a = 0; a < kMaxAcquirers; ++a) best = std::min(best, next_use(page, a, cursors[a]));
  return best;
}

}  // namespace strata::memory::internal
