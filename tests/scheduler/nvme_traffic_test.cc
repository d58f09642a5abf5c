// NVMe traffic of a step stays near what the placement needs. A guard against read-ahead and
// eviction policies that evict pages before they are used: with the optimizer's read-ahead
// sized for a big pool, the demo's 64-page pool read every moment page about twice per step
// (361 MiB instead of ~195) and nothing else noticed.
#include <gtest/gtest.h>

#include "models/gpt2/gpt_layout.h"
#include "tests/scheduler/scheduler_test_util.h"

namespace strata::testing {
namespace {

TEST(NvmeTraffic, SmallHostPoolReadsEachStreamedPageAboutOncePerStep) {
  ScratchDir dir("nvme_traffic");
  TrainOptions o = TinyRun(4);
  o.model.preset = "small";  // 10.8M parameters: 42 pages of 1 MiB per role
  o.data.batch = 2;
  o.data.seq = 32;
  o.budgets.engine = "paged";
  o.budgets.page_bytes = 1 << 20;
  o.budgets.host_mem = 64 << 20;  // the parameters (pinned) and 22 more pages
  o.budgets.params_on = "host";
  o.budgets.optimizer_on = "nvme";
  o.budgets.nvme_dirs = {dir.sub("nvme")};
  auto trainer = CreateTrainer(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  const uint64_t role_bytes = uint64_t(MakeGptLayout(*GptPreset("small")).total_numel) * 4;
  std::vector<StepStats> steps;
  ASSERT_TRUE((*trainer)->run([&](const StepStats& s) { steps.push_back(s); }).ok());
  ASSERT_EQ(steps.size(), 4u);
  // What streams through the pool each step: the two moments and the gradients (which do not
  // fit beside the pinned parameters). Some are read twice when the pool is this small; a
  // read-ahead that evicts what it is about to use reads all of them twice.
  const uint64_t streamed = 3 * role_bytes;
  for (size_t i = 2; i < steps.size(); ++i) {  // steady state: the moments exist on NVMe
    const uint64_t read = steps[i].moved_bytes.nvme_read;
    EXPECT_GE(read, 2 * role_bytes) << "step " << i + 1 << ": the moments stream from NVMe";
    EXPECT_LE(read, streamed * 3 / 2) << "step " << i + 1 << ": read " << read
                                      << " bytes, streamed state " << streamed;
  }
}

}  // namespace
}  // namespace strata::testing
