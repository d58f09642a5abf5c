// A synthetic, training-like page access trace, for tests and `strata bench pages`: the shape
// of one step as the scheduler drives the manager, with no model behind it.
//
// Block b owns pages 4b + {0: param, 1: grad, 2: adam_m, 3: adam_v}. One step:
//   forward   b = 0 .. B-1:  param on the device (read)
//   backward  b = B-1 .. 0:  param on the device (read), grad on the device (overwrite)
//   optimizer b = 0 .. B-1:  grad on the host (read), adam_m, adam_v, param on the host (write)
// Pure functions.
#pragma once

#include <vector>

#include "memory/memory_manager.h"

namespace strata::memory {

struct TraceAccess {
  PageId page = 0;
  Tier tier = Tier::kDevice;
  Access access = Access::kRead;
};

std::vector<TraceAccess> SyntheticTrainingStep(int blocks);
// The access plan (for set_access_plan) of a trace.
std::vector<PlannedAccess> PlanOf(const std::vector<TraceAccess>& trace);

}  // namespace strata::memory
