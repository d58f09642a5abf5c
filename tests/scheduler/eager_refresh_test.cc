// Note [Eager refresh] (scheduler/engine.h): each updated parameter page is uploaded into its slot
// by the optimizer thread right after its update. With every block's parameters on the device and
// no clipping, the driver then loads no parameter itself after the first step (all uploads are on
// the refresh track, none on the h2d track). Results stay bit-identical
// (offload_transparency_test); that the uploads overlap backward is bench offload's to measure.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "scheduler/trace.h"
#include "tests/scheduler/scheduler_test_util.h"

namespace strata::testing {
namespace {

using scheduler::Queue;

struct TraceCounts {
  std::map<long, int> loads;      // per step (0-based): parameter uploads on the h2d track
  std::map<long, int> refreshes;  // ... on the refresh track
};

TraceCounts ReadTrace(const std::string& path) {
  TraceCounts c;
  const auto t = nlohmann::json::parse(ReadFileBytes(path));
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int tid = e["tid"].get<int>();
    const long step = e["args"]["step"].get<long>();
    const std::string name = e["name"].get<std::string>();
    if (tid == int(Queue::kH2D) && name.rfind("param", 0) == 0) ++c.loads[step];
    if (tid == int(Queue::kRefresh)) ++c.refreshes[step];
  }
  return c;
}

TEST(EagerRefreshConcurrent, ParamsOnDeviceLoadNothingAfterTheFirstStep) {
  ScratchDir dir("eager_refresh");
  TrainOptions o = TinyRun(3);
  o.budgets.engine = "paged";
  o.budgets.page_bytes = 16384;
  o.budgets.params_on = "device";
  o.optimizer.grad_clip = 0;  // updates (and so uploads) during backward
  o.outputs.trace_path = dir.path() + "/trace.json";
  const TrainOutcome out = TrainInProcess(o, dir.path() + "/w.safetensors");
  ASSERT_TRUE(out.status.ok()) << out.status.to_string();
  TraceCounts c = ReadTrace(o.outputs.trace_path);
  EXPECT_GT(c.loads[0], 0) << "step 1 loads every block once";
  for (long step = 0; step < 3; ++step) {
    EXPECT_GT(c.refreshes[step], 0) << "step " << step + 1 << " uploads its updates";
  }
  for (long step = 1; step < 3; ++step) {
    EXPECT_EQ(c.loads[step], 0) << "step " << step + 1 << " loads a parameter itself";
  }
}

}  // namespace
}  // namespace strata::testing
