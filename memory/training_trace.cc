#include "memory/training_trace.h"

namespace strata::memory {

std::vector<TraceAccess> SyntheticTrainingStep(int blocks) {
  std::vector<TraceAccess> ops;
  auto id = [](int b, int role) { return PageId(4 * b + role); };
  for (int b = 0; b < blocks; ++b) ops.push_back({id(b, 0), Tier::kDevice, Access::kRead});
  for (int b = blocks - 1; b >= 0; --b) {
    ops.push_back({id(b, 0), Tier::kDevice, Access::kRead});
    ops.push_back({id(b, 1), Tier::kDevice, Access::kOverwrite});
  }
  for (int b = 0; b < blocks; ++b) {
    ops.push_back({id(b, 1), Tier::kHost, Access::kRead});
    ops.push_back({id(b, 2), Tier::kHost, Access::kWrite});
    ops.push_back({id(b, 3), Tier::kHost, Access::kWrite});
    ops.push_back({id(b, 0), Tier::kHost, Access::kWrite});
  }
  return ops;
}

std::vector<PlannedAccess> PlanOf(const std::vector<TraceAccess>& trace) {
  std::vector<PlannedAccess> plan;
  plan.reserve(trace.size());
  for (const TraceAccess& a : trace) plan.push_back({a.page, a.tier});
  return plan;
}

}  // namespace strata::memory
