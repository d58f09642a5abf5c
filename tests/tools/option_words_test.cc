// tools/option_words.h: the CLI words every option that the floors below mention as its flag,
// keeping the error's code and detail (Note [Options in messages] in core/util/option.h).
#include "tools/option_words.h"

#include <gtest/gtest.h>

#include "memory/budget_shortfall.h"
#include "tests/common/expect_fault.h"
#include "tools/budget_message.h"

namespace strata::tools {
namespace {

TEST(OptionWords, EachOptionIsItsFlag) {
  EXPECT_EQ(FlagOf(Option::kNvmeDir), "--nvme-dir");
  EXPECT_EQ(FlagOf(Option::kMicroBatchOrder), "--micro-batch-order");
  EXPECT_EQ(FlagOf(Option::kCkptDir), "--ckpt-dir");
  EXPECT_EQ(FlagOf(Option::kBeta1), "--beta1");
  EXPECT_EQ(FlagOf(Option::kTp), "--tp");
}

TEST(OptionWords, AnErrorKeepsItsCodeAndDetailInFlagTerms) {
  const Status raw = AtFault(Option::kNvmeDir,
                             Status::ResourceExhausted(Mention(Option::kNvmeDir) +
                                                       " /d: full; ask for less (" +
                                                       Mention(Option::kNvmeMem) + ")"),
                             {{"free_bytes", 4096}});
  const Status shown = InFlagTerms(raw);
  EXPECT_EQ(shown.message(), "--nvme-dir /d: full; ask for less (--nvme-mem)");
  EXPECT_EQ(shown.code(), StatusCode::kResourceExhausted);
  test_support::ExpectFault(shown, Option::kNvmeDir, {{"free_bytes", 4096}});
  EXPECT_TRUE(InFlagTerms(Status::Ok()).ok());
}

TEST(OptionWords, BudgetAdviceAndMentionsAreWordedTogether) {
  memory::BudgetShortfall s;
  s.tier = memory::Tier::kHost;
  s.need_bytes = 65536;
  s.have_bytes = 4096;
  const Status raw =
      WithDetail(Status::ResourceExhausted("no frame for " + Mention(Option::kSeq)), s);
  EXPECT_EQ(InFlagTerms(WithBudgetAdvice(raw)).message(),
            "no frame for --seq; raise --host-mem to at least 65536 (64.00 KiB)");
}

}  // namespace
}  // namespace strata::tools
