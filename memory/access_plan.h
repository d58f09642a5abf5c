// AccessPlan (internal to memory/, pure): the future of every page for Belady eviction.
//
// A plan is the ordered list of (page, tier) acquires of one training step; steps repeat, so
// position p of the infinite sequence is entry p % size() of iteration p / size(). next_use()
// answers "at which absolute position is `page` next acquired on `tier`, at or after `from`",
// kNever when the plan never touches it there. Immutable after construction; share it with
// shared_ptr<const AccessPlan>.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "memory/page_plan.h"

namespace strata::memory {
enum class Tier : uint8_t;
struct PlannedAccess;
}  // namespace strata::memory

namespace strata::memory::internal {

class AccessPlan {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  explicit AccessPlan(const std::vector<PlannedAccess>& plan);
  uint64_t size() const { return size_; }
  uint64_t next_use(PageId page, Tier tier, uint64_t from) const;

 private:
  static uint64_t key(PageId page, Tier tier) { return page * 4 + static_cast<uint64_t>(tier); }
  uint64_t size_ = 0;
  std::unordered_map<uint64_t, std::vector<uint64_t>> positions_;  // sorted, within one step
};

}  // namespace strata::memory::internal
