// The range table (scheduler/option_ranges.h): out-of-range values name their flag; a sentinel
// is the default unless the flag was given.
#include "scheduler/option_ranges.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

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
