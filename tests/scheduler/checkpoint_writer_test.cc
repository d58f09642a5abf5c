#include "scheduler/checkpoint_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_layout.h"
#include "tests/scheduler/scheduler_test_util.h"

namespace strata::scheduler {
namespace {

using memory::Role;

// A checkpoint holds the parameters and both moments of every block, the master copy only with
// --delayed-update, and never a gradient (rebuilt every step).
TEST(CheckpointWriter, DurablePagesAreParamsMomentsAndTheMasterCopy) {
  const GptLayout layout = MakeGptLayout(*GptPreset("tiny"));
  for (bool delayed : {false, true}) {
    auto pages = StatePages::Make(layout, 4096, delayed);
    ASSERT_TRUE(pages.ok()) << pages.status().to_string();
    const std::vector<memory::PageId> durable = DurablePages(*pages, layout.num_blocks(), delayed);
    const uint64_t expected =
        pages->pages_of_role(Role::kParam) + pages->pages_of_role(Role::kAdamM) +
        pages->pages_of_role(Role::kAdamV) + (delayed ? pages->pages_of_role(Role::kMaster) : 0);
    EXPECT_EQ(durable.size(), expected) << "delayed " << delayed;
    const std::set<memory::PageId> unique(durable.begin(), durable.end());
    EXPECT_EQ(unique.size(), durable.size());
    for (int b = 0; b < layout.num_blocks(); ++b) {
      for (memory::PageId p : pages->pages(b, Role::kGrad)) EXPECT_EQ(unique.count(p), 0u);
    }
  }
}

// Nothing asked for, nothing to wait on (the trainer's drain before the first checkpoint).
TEST(CheckpointWriter, WaitWithoutACheckpointIsOk) {
  CheckpointWriter writer({}, CheckpointRecord{});
  EXPECT_TRUE(writer.wait().ok());
}

// The writer's two threads (named Thread so that TSan runs it, tests/sanitize/tsan_filter.txt):
// the driver asks for a checkpoint after every step while the previous one is written on the
// Engine's optimizer queue, behind that step's updates. The record ends listing the newest two,
// and the run's losses and weights are those of a run without checkpoints (a write never changes
// what a step computes).
TEST(CheckpointWriterThread, CheckpointEveryStepKeepsTheNewestAndChangesNothing) {
  test_support::ScratchDir dir("ckpt-writer");
  TrainOptions o = testing::TinyRun(5);
  o.budgets.engine = "paged";
  o.budgets.page_bytes = 16384;
  o.budgets.nvme_dirs = {dir.sub("nvme0")};
  o.budgets.params_on = "nvme";
  o.budgets.optimizer_on = "nvme";
  o.budgets.host_mem = 640 * 1024;
  const testing::TrainOutcome plain = testing::TrainInProcess(o, dir.path() + "/plain.st");
  ASSERT_TRUE(plain.status.ok()) << plain.status.to_string();

  TrainOptions c = o;
  c.budgets.nvme_dirs = {dir.sub("nvme1")};
  c.checkpoints.dir = dir.sub("ckpt");
  c.checkpoints.every = 1;
  c.checkpoints.keep = 2;
  const testing::TrainOutcome checked = testing::TrainInProcess(c, dir.path() + "/ckpt.st");
  ASSERT_TRUE(checked.status.ok()) << checked.status.to_string();
  ASSERT_EQ(checked.steps.size(), plain.steps.size());
  for (size_t i = 0; i < plain.steps.size(); ++i) {
    EXPECT_EQ(checked.steps[i].loss, plain.steps[i].loss) << "step " << i + 1;
  }
  EXPECT_EQ(checked.weights, plain.weights);

  auto record = ReadCheckpointRecord(c.checkpoints.dir);
  ASSERT_TRUE(record.ok()) << record.status().to_string();
  ASSERT_TRUE(record->has_value());
  std::vector<long> steps;
  for (const CheckpointEntry& e : (*record)->checkpoints) steps.push_back(e.step);
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps, (std::vector<long>{4, 5}));
}

}  // namespace
}  // namespace strata::scheduler
