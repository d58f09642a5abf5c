// Issue 32, item 2: the trainer factory's refusals carry the option at fault and the numbers
// their message states (an OptionFault detail), so that an edge words them without parsing the
// message; the message itself is unchanged (the CLI tests hold its words).
#include <gtest/gtest.h>

#include <string>

#include "core/util/option.h"
#include "core/util/sizes.h"
#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_model.h"
#include "scheduler/in_memory_budget.h"
#include "tests/common/expect_fault.h"
#include "tests/scheduler/scheduler_test_util.h"

namespace strata::testing {
namespace {

struct Refusal {
  const char* what;
  void (*set)(TrainOptions&);
  Option option;
  const char* number;  // nullptr: no number to check
  int64_t value;
};

TEST(TrainerFaults, EachRefusalNamesItsOptionAndNumbers) {
  const Refusal refusals[] = {
      {"micro-batch not dividing the batch", [](TrainOptions& o) { o.data.micro_batch = 3; },
       Option::kMicroBatch, "got", 3},
      {"seq above the context", [](TrainOptions& o) { o.data.seq = 128; }, Option::kSeq,
       "got", 128},
      {"checkpoints without a directory", [](TrainOptions& o) { o.checkpoints.every = 2; },
       Option::kCkptDir, nullptr, 0},
      {"discard-newer without resume-from",
       [](TrainOptions& o) { o.checkpoints.discard_newer = true; }, Option::kDiscardNewer,
       nullptr, 0},
      {"engine memory with an NVMe tier",
       [](TrainOptions& o) {
         o.budgets.engine = "memory";
         o.budgets.nvme_dirs = {"/nonexistent"};
       },
       Option::kEngine, nullptr, 0},
      {"shard outside its choices", [](TrainOptions& o) { o.grid.shard = "half"; },
       Option::kShard, nullptr, 0},
      {"split-ops outside its choices", [](TrainOptions& o) { o.grid.split_ops = "3"; },
       Option::kSplitOps, nullptr, 0},
      {"optimizer on the device", [](TrainOptions& o) {
         o.budgets.engine = "paged";
         o.budgets.optimizer_on = "device";
       },
       Option::kOptimizerOn, nullptr, 0},
      {"params on nvme without a tier", [](TrainOptions& o) {
         o.budgets.engine = "paged";
         o.budgets.params_on = "nvme";
       },
       Option::kParamsOn, nullptr, 0},
      {"gpu-mem below the working set", [](TrainOptions& o) { o.budgets.gpu_mem = 1 << 20; },
       Option::kGpuMem, "got", 1 << 20},
      {"page size not a power of two",
       [](TrainOptions& o) {
         o.budgets.engine = "paged";
         o.budgets.page_bytes = 12288;
       },
       Option::kPageSize, "got", 12288},
      {"host eviction outside its choices",
       [](TrainOptions& o) {
         o.budgets.engine = "paged";
         o.budgets.host_eviction = "fifo";
       },
       Option::kHostEviction, nullptr, 0},
      {"schedule outside its choices", [](TrainOptions& o) { o.grid.schedule = "zigzag"; },
       Option::kSchedule, nullptr, 0},
      {"gds on without cuda", [](TrainOptions& o) { o.gds = "on"; }, Option::kGds, nullptr, 0},
      {"sim link with cuda",
       [](TrainOptions& o) {
         o.device = "cuda";
         o.sim_link_gbps = 1;
       },
       Option::kSimLinkGbps, nullptr, 0},
  };
  for (const Refusal& r : refusals) {
    TrainOptions o = TinyRun();
    r.set(o);
    const auto trainer = CreateTrainer(o);
    ASSERT_FALSE(trainer.ok()) << r.what;
    SCOPED_TRACE(r.what);
    OptionNumbers numbers;
    if (r.number != nullptr) numbers.emplace_back(r.number, r.value);
    test_support::ExpectFault(trainer.status(), r.option, numbers);
  }
}

// The in-memory trainer's own refusal: --engine memory with --gpu-mem below what it allocates, at
// fault of {gpu_mem} with both sizes (in_memory_budget.h).
TEST(TrainerFaults, TheInMemoryTrainersBudgetNamesGpuMemAndBothSizes) {
  TrainOptions o = TinyRun();
  o.budgets.engine = "memory";
  o.budgets.gpu_mem = 1 << 20;
  const Result<GptConfig> tiny = GptPreset("tiny");
  ASSERT_TRUE(tiny.ok());
  const uint64_t need = InMemoryDeviceBytes(o, GptModel(*tiny), o.data.seq);
  ASSERT_GT(need, uint64_t{1} << 20);
  const auto trainer = CreateTrainer(o);
  EXPECT_EQ(trainer.status().code(), StatusCode::kResourceExhausted)
      << trainer.status().to_string();
  EXPECT_NE(trainer.status().message().find("{gpu_mem} 1.00 MiB is below the " +
                                            FormatBytes(need) + " that training"),
            std::string::npos)
      << trainer.status().to_string();
  test_support::ExpectFault(trainer.status(), Option::kGpuMem,
                            {{"got", 1 << 20}, {"need_bytes", int64_t(need)}});
}

}  // namespace
}  // namespace strata::testing
