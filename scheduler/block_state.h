// BlockState: what the Engine's driver knows about one model block between steps — which version
// of its parameters is current, what a load of its pages must wait for, and where its gradient
// is. One struct per block (indexed by block id), owned by the Engine and touched only on the
// driver thread; the optimizer queue gets copies of what it needs with each job.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "core/device/device.h"
#include "core/util/status.h"

namespace strata::scheduler {

struct BlockState {
  // Bumped when an update (or --delayed-update's publish) that changes the parameter pages is
  // submitted: a device slot loaded at an older version is stale (Note [Eager refresh]).
  uint64_t param_version = 0;
  // The block's update of the current step was submitted (its next use lies in the next step).
  bool updated_this_step = false;
  // Per parameter page: what the next load of that page waits on (its update or publish). Page
  // granularity lets a block's load start while its later pages still update.
  std::vector<std::shared_future<Status>> update_done;
  // The last update that reads the block's gradient pages (the next copy down waits for it).
  std::shared_future<Status> grads_read;
  // Per gradient page: the page's final gradient of the step is on the host.
  std::vector<std::shared_ptr<Event>> grad_ready;
  // The program position of the op that last reads the block's parameters in a step.
  size_t last_param_use = 0;
};

}  // namespace strata::scheduler
