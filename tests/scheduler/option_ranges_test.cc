// The range table (scheduler/option_ranges.h): out-of-range values name their flag; a sentinel
// is the default unless the flag was given.
#include "scheduler/option_ranges.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "memory/page_plan.h"
#include "models/gpt2/gpt_config.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

// The options' mentions (core/util/option.h) by the flags the messages used to name.
std::string M(const std::string& flag) {
  std::string key = flag.substr(2);
  for (char& c : key) c = c == '-' ? '_' : c;
  return "{" + key + "}";
}
Option O(const std::string& flag) { return *OptionOfKey(M(flag).substr(1, M(flag).size() - 2)); }

Status Check(const TrainOptions& o, const std::string& given_flag = "") {
  return CheckOptionRanges(o, [&](Option f) { return !given_flag.empty() && f == O(given_flag); });
}

TEST(OptionRanges, DefaultsPass) { EXPECT_TRUE(Check(TrainOptions{}).ok()); }

TEST(OptionRanges, OutOfRangeNamesTheFlag) {
  auto expect_bad = [](const TrainOptions& o, const std::string& flag) {
    const Status s = Check(o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << flag;
    EXPECT_EQ(s.message().rfind(M(flag) + " ", 0), 0u) << s.message();
    test_support::ExpectFault(s, O(flag));
  };
  TrainOptions beta1, eps, lr, clip, min_lr, min_lr_above;
  beta1.optimizer.beta1 = 1.0f;  // the open end
  expect_bad(beta1, "--beta1");
  eps.optimizer.eps = 0;
  expect_bad(eps, "--eps");
  lr.optimizer.lr = std::nanf("");
  expect_bad(lr, "--lr");
  clip.optimizer.grad_clip = -1;
  expect_bad(clip, "--grad-clip");
  min_lr.optimizer.min_lr = -0.5f;  // not the sentinel -1
  expect_bad(min_lr, "--min-lr");
  min_lr_above.optimizer.min_lr = 1.0f;  // above --lr
  expect_bad(min_lr_above, "--min-lr");
}

// Issue 32, item 2: a whole-numbered option's refusal carries the value and both (allowed) ends
// as numbers; a size's are bytes.
TEST(OptionRanges, AWholeNumberedRefusalCarriesTheValueAndTheBounds) {
  using test_support::ExpectFault;
  TrainOptions batch, steps, threads, micro, every, warmup, gpu, page;
  batch.data.batch = 0;
  ExpectFault(Check(batch), Option::kBatch, {{"got", 0}, {"min", 1}, {"max", 65536}});
  steps.steps = -3;
  ExpectFault(Check(steps), Option::kSteps, {{"got", -3}, {"min", 0}, {"max", 1000000000000}});
  warmup.optimizer.warmup = -1;
  ExpectFault(Check(warmup), Option::kWarmup, {{"got", -1}, {"min", 0}});
  threads.threads = 5000;
  ExpectFault(Check(threads), Option::kThreads, {{"got", 5000}, {"min", 0}, {"max", 4096}});
  micro.data.micro_batch = -2;
  ExpectFault(Check(micro), Option::kMicroBatch, {{"got", -2}, {"max", 65536}});
  every.checkpoints.every = -1;
  ExpectFault(Check(every), Option::kCkptEvery, {{"got", -1}, {"min", 0}});
  TrainOptions seq;
  seq.data.seq = 0;
  ExpectFault(Check(seq, "--seq"), Option::kSeq, {{"got", 0}, {"min", 1}, {"max", kMaxBlockSize}});
  gpu.budgets.gpu_mem = uint64_t{1} << 62;
  ExpectFault(Check(gpu), Option::kGpuMem,
              {{"got", int64_t{1} << 62}, {"min", 1}, {"max", int64_t{1} << 50}});
  page.budgets.page_bytes = 1024;
  ExpectFault(Check(page), Option::kPageSize,
              {{"got", 1024}, {"min", int64_t(memory::kMinPageBytes)}, {"max", int64_t{1} << 30}});
}

TEST(OptionRanges, ASentinelIsTheDefaultOnlyWhenNotGiven) {
  TrainOptions o;  // seq 0, gpu_mem 0, min_lr -1: defaults
  EXPECT_TRUE(Check(o).ok());
  for (const char* flag :
       {"--seq", "--gpu-mem", "--host-mem", "--nvme-mem", "--page-size", "--min-lr"}) {
    const Status s = Check(o, flag);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << flag;
    EXPECT_NE(s.message().find("leave " + M(flag) + " out"), std::string::npos) << s.message();
  }
}

TEST(OptionRanges, TokensPerStep) {
  EXPECT_TRUE(CheckTokensPerStep(64, 1024).ok());
  EXPECT_EQ(CheckTokensPerStep(65536, 65536).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
