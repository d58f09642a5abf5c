// MemoryManager::borrow_frame / give_back_frame: frames of the host pool lent outside any page.
#include "memory/frame_source.h"
#include "memory/memory_manager.h"

namespace strata::memory {

namespace {
// Not a page: TakeFrame uses it only to name the waiter in a stall report.
constexpr PageId kBorrower = ~PageId{0};
}  // namespace

Result<void*> MemoryManager::borrow_frame() {
  return internal::TakeFrame(*m_, kBorrower, /*may_wait=*/true, /*not_needed_before=*/0);
}

void MemoryManager::give_back_frame(void* frame) {
  m_->pool->put(frame);  // wakes frame waiters
}

}  // namespace strata::memory
