#include "memory/access_plan.h"

#include <algorithm>

#include "core/util/check.h"

namespace strata::memory::internal {

AccessPlan::AccessPlan(const std::vector<PlannedAccess>& plan) : size_(plan.size()) {
  for (uint64_t i = 0; i < plan.size(); ++i) {
    STRATA_CHECK(plan[i].acquirer < kMaxAcquirers) << "acquirer " << int(plan[i].acquirer);
    positions_[key(plan[i].page, plan[i].acquirer)].push_back(i);
  }
}

uint64_t AccessPlan::next_use(PageId page, int acquirer, uint64_t from) const {
  if (size_ == 0) return kNever;
  auto it = positions_.find(key(page, acquirer));
  if (it == positions_.end()) return kNever;
  const std::vector<uint64_t>& pos = it->second;
  const uint64_t iteration = from / size_;
  const uint64_t offset = from % size_;
  auto p = std::lower_bound(pos.begin(), pos.end(), offset);
  if (p != pos.end()) return iteration * size_ + *p;
  return (iteration + 1) * size_ + pos.front();
}

uint64_t AccessPlan::next_use(PageId page, const uint64_t* cursors) const {
  uint64_t best = kNever;
  for (int a = 0; a < kMaxAcquirers; ++a) best = std::min(best, next_use(page, a, cursors[a]));
  return best;
}

}  // namespace strata::memory::internal
