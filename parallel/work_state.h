// WorkState: the completion of one Comm op, which a backend completes and CommWorks wait on.
//
// Threads: wait() and done() may be called from any thread, any number of times; complete() is
// called once, by the backend's completing thread (the MPI comm thread).
#pragma once

#include <atomic>

#include "core/util/status.h"
#include "parallel/comm.h"

namespace strata::parallel {

class WorkState {
 public:
  virtual ~WorkState() = default;
  // Blocks until the op has completed or failed; its outcome.
  virtual Status wait() = 0;
  virtual bool done() const = 0;
};

// A WorkState that a thread completes once with a Status. No lock: status_ is written before
// done_ is set with release order, and read only after done_ is seen with acquire order.
class CompletionFlag final : public WorkState {
 public:
  // Publishes `status` and wakes every waiter. Exactly once.
  void complete(Status status);
  Status wait() override;
  bool done() const override;

 private:
  Status status_;
  std::atomic<bool> done_{false};
};

}  // namespace strata::parallel
