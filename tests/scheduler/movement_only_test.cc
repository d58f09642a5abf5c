// --movement-only: the same step program, moves and updates, without the kernels. Its moved
// bytes must equal the real run's (it measures that run's movement), and it trains nothing.
#include <gtest/gtest.h>

#include "tests/scheduler/scheduler_test_util.h"

namespace strata::testing {
namespace {

TEST(MovementOnly, MovesWhatTheRealRunMovesAndComputesNothing) {
  ScratchDir dir("movement_only");
  TrainOptions o = TinyRun(3);
  o.budgets.engine = "paged";
  o.budgets.page_bytes = 16384;
  o.budgets.nvme_dirs = {dir.sub("real")};
  o.budgets.host_mem = 12 * 16384;
  o.budgets.params_on = "nvme";
  o.budgets.optimizer_on = "nvme";
  const TrainOutcome real = TrainInProcess(o, dir.path() + "/real.safetensors");
  ASSERT_TRUE(real.status.ok()) << real.status.to_string();

  o.movement_only = true;
  o.budgets.nvme_dirs = {dir.sub("movement")};
  o.outputs.export_path.clear();
  auto trainer = CreateTrainer(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  std::vector<StepStats> steps;
  ASSERT_TRUE((*trainer)->run([&](const StepStats& s) { steps.push_back(s); }).ok());
  ASSERT_EQ(steps.size(), real.steps.size());
  uint64_t real_h2d = 0, moved_h2d = 0, real_d2h = 0, moved_d2h = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].loss, 0.0f) << "step " << i + 1;
    EXPECT_NE(real.steps[i].loss, 0.0f);
    real_h2d += real.steps[i].moved_bytes.h2d;
    moved_h2d += steps[i].moved_bytes.h2d;
    real_d2h += real.steps[i].moved_bytes.d2h;
    moved_d2h += steps[i].moved_bytes.d2h;
  }
  EXPECT_EQ(moved_h2d, real_h2d);
  EXPECT_GT(moved_h2d, 0u);
  // Gradient copies may finish after the step that issued them is reported: the totals agree
  // only up to the last step's gradients.
  EXPECT_GT(moved_d2h, 0u);
  EXPECT_GT(real_d2h, 0u);
}

TEST(MovementOnly, RefusedWhereItMakesNoSense) {
  TrainOptions o = TinyRun(1);
  o.movement_only = true;
  o.budgets.engine = "memory";
  EXPECT_EQ(CreateTrainer(o).status().code(), StatusCode::kInvalidArgument);
  o.budgets.engine = "paged";
  o.outputs.export_path = "/var/tmp/never-written.safetensors";
  auto t = CreateTrainer(o);
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("{movement_only}"), std::string::npos);
}

}  // namespace
}  // namespace strata::testing
