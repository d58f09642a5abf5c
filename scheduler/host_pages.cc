#include "scheduler/host_pages.h"

#include <utility>

namespace strata::scheduler {

using memory::Access;
using memory::PageId;
using memory::PageRef;

Result<PageRef> HostPages::acquire(PageId page, Access access, Acquirer acquirer,
                                   std::string holder, long step) {
  if (step == recorded_step()) {
    std::lock_guard lock(record_mu_);
    recorded_[static_cast<int>(acquirer)].push_back(page);
  }
  if (access != Access::kRead) unpin(page);
  memory::AcquireOptions ao;
  ao.holder = std::move(holder);
  ao.acquirer = static_cast<uint8_t>(acquirer);
  return mm_.acquire_sync(page, access, ao);
}

Status HostPages::release(PageRef& ref) {
  const PageId page = ref.page();
  ref.release();
  return repin(page);
}

void HostPages::prefetch(PageId page) {
  if (has_nvme()) mm_.prefetch(page);
}

std::vector<memory::PlannedAccess> HostPages::take_plan() {
  record(-1);
  std::lock_guard lock(record_mu_);
  std::vector<memory::PlannedAccess> plan;
  for (Acquirer a : {Acquirer::kDriver, Acquirer::kOptimizer}) {
    for (PageId p : recorded_[static_cast<int>(a)]) plan.push_back({p, static_cast<uint8_t>(a)});
    recorded_[static_cast<int>(a)].clear();
  }
  return plan;
}

Status HostPages::set_homes(const std::vector<PageId>& pages) {
  pins_.resize(mm_.options().num_pages);
  home_.assign(mm_.options().num_pages, false);
  for (PageId p : pages) {
    home_[p] = true;
    STRATA_RETURN_IF_ERROR(repin(p));
  }
  return Status::Ok();
}

void HostPages::unpin(PageId page) {
  if (page >= home_.size() || !home_[page]) return;
  std::lock_guard lock(pins_mu_);
  pins_[page].release();
}

Status HostPages::repin(PageId page) {
  if (page >= home_.size() || !home_[page]) return Status::Ok();
  memory::AcquireOptions ao;
  ao.holder = "host home pin";
  ao.acquirer = static_cast<uint8_t>(Acquirer::kOptimizer);
  STRATA_ASSIGN_OR_RETURN(PageRef ref, mm_.acquire_sync(page, Access::kRead, ao));
  std::lock_guard lock(pins_mu_);
  pins_[page] = std::move(ref);
  return Status::Ok();
}

void HostPages::release_homes() {
  std::lock_guard lock(pins_mu_);
  pins_.clear();
}

}  // namespace strata::scheduler
