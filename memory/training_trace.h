// A synthetic, training-like page access trace, for tests and `strata bench pages`: the shape
// of one step as the scheduler drives the manager, with no model behind it.
//
// Block b owns pages 4b + {0: param, 1: grad, 2: adam_m, 3: adam_v}. One step:
//   driver (acquirer 0), forward   b = 0 .. B-1:  param (read, to upload it)
//   driver,              backward  b = B-1 .. 0:  param (read), grad (overwrite, from the device)
//   optimizer (acquirer 1)         b = 0 .. B-1:  grad (read), adam_m, adam_v, param (write)
// Pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "memory/memory_manager.h"

namespace strata::memory {

inline constexpr uint8_t kTraceDriver = 0;
inline constexpr uint8_t kTraceOptimizer = 1;

struct TraceAccess {
  PageId page = 0;
  Access access = Access::kRead;
  uint8_t acquirer = kTraceDriver;
};

std::vector<TraceAccess> SyntheticTrainingStep(int blocks);
// The access plan (for set_access_plan) of a trace.
std::vector<PlannedAccess> PlanOf(const std::vector<TraceAccess>& trace);

}  // namespace strata::memory
