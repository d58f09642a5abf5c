// AccessPlan::next_use against a direct scan of the plan, on random plans: every page, every
// acquirer, cursors inside, at the end of and several steps past the plan.
#include "memory/access_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace strata::memory::internal {
namespace {

// The absolute position at or after `from` of the next (page, acquirer) entry, by scanning.
uint64_t ScanNextUse(const std::vector<PlannedAccess>& plan, PageId page, int acquirer,
                     uint64_t from) {
  if (plan.empty()) return AccessPlan::kNever;
  for (uint64_t p = from; p < from + plan.size(); ++p) {
    const PlannedAccess& a = plan[p % plan.size()];
    if (a.page == page && a.acquirer == acquirer) return p;
  }
  return AccessPlan::kNever;
}

TEST(AccessPlan, NextUseMatchesAScanOfThePlan) {
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 40; ++trial) {
    const uint64_t pages = 1 + rng() % 30;
    std::vector<PlannedAccess> plan(rng() % 80);
    for (PlannedAccess& a : plan) {
      a.page = rng() % pages;
      a.acquirer = static_cast<uint8_t>(rng() % kMaxAcquirers);
    }
    const AccessPlan ap(plan);
    ASSERT_EQ(ap.size(), plan.size());
    for (PageId page = 0; page < pages + 2; ++page) {  // pages + 2: ids the plan never names
      for (int acquirer = 0; acquirer < kMaxAcquirers; ++acquirer) {
        for (uint64_t from : {uint64_t{0}, uint64_t{1}, uint64_t(plan.size() / 2),
                              uint64_t(plan.size()), uint64_t(3 * plan.size() + 5)}) {
          ASSERT_EQ(ap.next_use(page, acquirer, from), ScanNextUse(plan, page, acquirer, from))
              << "trial " << trial << " page " << page << " acquirer " << acquirer << " from "
              << from << " plan size " << plan.size();
        }
      }
      const uint64_t cursors[kMaxAcquirers] = {0, 2, uint64_t(plan.size()), 7};
      uint64_t best = AccessPlan::kNever;
      for (int a = 0; a < kMaxAcquirers; ++a) {
        best = std::min(best, ScanNextUse(plan, page, a, cursors[a]));
      }
      ASSERT_EQ(ap.next_use(page, cursors), best) << "trial " << trial << " page " << page;
    }
  }
}

}  // namespace
}  // namespace strata::memory::internal
