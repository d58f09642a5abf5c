#include "memory/training_trace.h"

namespace strata::memory {

std::vector<TraceAccess> SyntheticTrainingStep(int blocks) {
  std::vector<TraceAccess> ops;
  auto id = [](int b, int role) { return PageId(4 * b + role); };
  for (int b = 0; b < blocks; ++b) ops.push_back({id(b, 0), Access::kRead, kTraceDriver});
  for (int b = blocks - 1; b >= 0; --b) {
    ops.push_back({id(b, 0), Access::kRead, kTraceDriver});
    ops.push_back({id(b, 1), Access::kOverwrite, kTraceDriver});
  }
  for (int b = 0; b < blocks; ++b) {
    ops.push_back({id(b, 1), Access::kRead, kTraceOptimizer});
    ops.push_back({id(b, 2), Access::kWrite, kTraceOptimizer});
    ops.push_back({id(b, 3), Access::kWrite, kTraceOptimizer});
    ops.push_back({id(b, 0), Access::kWrite, kTraceOptimizer});
  }
  return ops;
}

std::vector<PlannedAccess> PlanOf(const std::vector<TraceAccess>& trace) {
  std::vector<PlannedAccess> plan;
  plan.reserve(trace.size());
  for (const TraceAccess& a : trace) plan.push_back({a.page, a.acquirer});
  return plan;
}

}  // namespace strata::memory
