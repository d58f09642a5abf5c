#include "parallel/work_state.h"

namespace strata::parallel {

void CompletionFlag::complete(Status status) {
  STRATA_CHECK(!done_.load(std::memory_order_relaxed)) << "a comm op completed twice";
  status_ = std::move(status);
  done_.store(true, std::memory_order_release);
  done_.notify_all();
}

Status CompletionFlag::wait() {
  // atomic::wait returns when the value differs from `false`; it may also wake spuriously, hence
  // the loop.
  while (!done_.load(std::memory_order_acquire)) done_.wait(false, std::memory_order_acquire);
  return status_;
}

bool CompletionFlag::done() const { return done_.load(std::memory_order_acquire); }

}  // namespace strata::parallel
