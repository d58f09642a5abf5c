#include "memory/eviction_policy.h"

namespace strata::memory::internal {

PageId VictimOrder::operator[](size_t i) {
  if (i >= sorted_) {
    const size_t upto = std::min(v_.size(), std::max(i + 1, 2 * sorted_ + 8));
    std::partial_sort(v_.begin() + sorted_, v_.begin() + upto, v_.end(),
                      [](const auto& a, const auto& b) {
                        return a.first != b.first ? a.first > b.first : a.second < b.second;
                      });
    sorted_ = upto;
  }
  return v_[i].second;
}

void PlanCursors::set_plan(std::vector<PlannedAccess> plan) {
  auto owned = std::make_unique<const AccessPlan>(plan);
  const AccessPlan* in_force = owned.get();
  {
    std::lock_guard lock(plans_mu_);
    plans_.push_back(std::move(owned));
  }
  plan_.store(in_force, std::memory_order_release);
  set_position(0);
}

void PlanCursors::advance(PageId page, int acquirer) {
  auto pl = plan();
  if (!pl || pl->size() == 0) return;
  std::atomic<uint64_t>& cursor = cursor_[acquirer];
  uint64_t cur = cursor.load(std::memory_order_relaxed);
  const uint64_t next = pl->next_use(page, acquirer, cur);
  if (next == AccessPlan::kNever || next >= cur + pl->size()) return;
  while (cur < next + 1 &&
         !cursor.compare_exchange_weak(cur, next + 1, std::memory_order_relaxed)) {
  }
}

void PlanCursors::set_position(uint64_t position) {
  for (auto& c : cursor_) c.store(position, std::memory_order_relaxed);
}

void PlanCursors::snapshot(uint64_t* cursors) const {
  for (int a = 0; a < kMaxAcquirers; ++a) cursors[a] = cursor_[a].load(std::memory_order_relaxed);
}

uint64_t PlanCursors::next_use(PageId page) const {
  auto pl = plan();
  if (!pl || pl->size() == 0) return AccessPlan::kNever;
  uint64_t cursors[kMaxAcquirers];
  snapshot(cursors);
  return pl->next_use(page, cursors);
}

Ranking RankVictims(const std::vector<PageId>& candidates, const PageTable& pages,
                    EvictionPolicy policy, const PlanCursors& cursors, uint64_t not_needed_before) {
  auto pl = policy == EvictionPolicy::kBelady ? cursors.plan() : nullptr;
  const bool planned = pl && pl->size() > 0;
  uint64_t at[kMaxAcquirers];
  cursors.snapshot(at);
  size_t demoted = 0;
  std::vector<std::pair<uint64_t, PageId>> scored;
  scored.reserve(candidates.size());
  for (PageId c : candidates) {
    const uint64_t score = planned ? pl->next_use(c, at)
                                   : UINT64_MAX - pages[c].last_use.load(std::memory_order_relaxed);
    // A prefetch evicts nothing needed no later than the page it brings in.
    if (not_needed_before > 0 && score <= not_needed_before) continue;
    if (!planned && score == UINT64_MAX) ++demoted;
    scored.emplace_back(score, c);
  }
  return Ranking{VictimOrder(std::move(scored)), planned, demoted};
}

}  // namespace strata::memory::internal
