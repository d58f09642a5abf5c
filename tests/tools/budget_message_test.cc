// Budget shortfalls reach the user worded with their flag: memory/ states the numbers in words
// that name no flag, tools/budget_message.h adds which flag to raise and how far, and a too
// small --host-mem on the command line is refused with a line that names --host-mem.
#include "tools/budget_message.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

using memory::BudgetShortfall;
using memory::Relief;
using memory::Tier;
using tools::WithBudgetAdvice;

// What MemoryManager::Create returns for a host pool below one page (memory_manager_test checks
// that it carries this shortfall).
Status HostBelowOnePage() {
  return WithDetail(
      Status::ResourceExhausted("the host budget 32.00 KiB is below one page (64.00 KiB)"),
      BudgetShortfall{.tier = Tier::kHost,
                      .need_bytes = 65536,
                      .have_bytes = 32768,
                      .what = "one page",
                      .held_by = "",
                      .or_lower = Relief::kSmallerPages});
}

TEST(BudgetMessage, HostBelowOnePageNamesHostMemAndPageSize) {
  const Status shown = WithBudgetAdvice(HostBelowOnePage());
  EXPECT_EQ(shown.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(shown.message(),
            "the host budget 32.00 KiB is below one page (64.00 KiB); raise --host-mem to at "
            "least 65536 (64.00 KiB), or lower --page-size");
  const BudgetShortfall* s = DetailOf<BudgetShortfall>(shown);
  ASSERT_NE(s, nullptr) << "the detail stays for code";
  EXPECT_EQ(s->need_bytes, 65536u);
  EXPECT_EQ(s->have_bytes, 32768u);
}

BudgetShortfall Short(Tier tier, uint64_t need, uint64_t have) {
  BudgetShortfall s;
  s.tier = tier;
  s.need_bytes = need;
  s.have_bytes = have;
  return s;
}

TEST(BudgetMessage, AdviceGoesOnTheFirstLine) {
  const Status stall = WithDetail(
      Status::Timeout("page 9 on host: waited 200 ms for a free page frame without progress; "
                      "raise the host budget or have holders release pages sooner\n"
                      "Who holds what:\n  page 0: [read on host by forward block 1]\n"),
      Short(Tier::kHost, 5 * 4096, 4 * 4096));
  const std::string m = WithBudgetAdvice(stall).message();
  const std::string first = m.substr(0, m.find('\n'));
  EXPECT_NE(first.find("; raise --host-mem to at least 20480 (20.00 KiB)"), std::string::npos)
      << m;
  EXPECT_EQ(first.find("--page-size"), std::string::npos) << m;
  EXPECT_NE(m.find("\nWho holds what:\n  page 0: [read on host by forward block 1]\n"),
            std::string::npos)
      << m;
  EXPECT_EQ(WithBudgetAdvice(stall).code(), StatusCode::kTimeout);
}

TEST(BudgetMessage, EachTierNamesItsFlag) {
  EXPECT_STREQ(tools::BudgetFlag(Tier::kDevice), "--gpu-mem");
  EXPECT_STREQ(tools::BudgetFlag(Tier::kHost), "--host-mem");
  EXPECT_STREQ(tools::BudgetFlag(Tier::kNvme), "--nvme-mem");
  EXPECT_EQ(tools::BudgetAdvice(Short(Tier::kNvme, 0, 4096)), "raise --nvme-mem");
}

TEST(BudgetMessage, StatusWithoutShortfallIsUnchanged) {
  const Status plain =
      Status::ResourceExhausted("--gpu-mem 1.00 MiB is below ...; raise --gpu-mem");
  EXPECT_EQ(WithBudgetAdvice(plain), plain);
  EXPECT_TRUE(WithBudgetAdvice(Status::Ok()).ok());
}

// The command line: a --host-mem too small for the run is refused before step 1 with one line
// that names --host-mem (and, with --nvme-dir, --page-size: the pool needs a few pages).
TEST(BudgetMessageCli, TooSmallHostMemNamesTheFlag) {
  ScratchDir dir("budget_cli");
  const std::vector<std::string> train = {"train", "--model", "tiny",      "--steps", "1",
                                          "--batch", "2",     "--threads", "1"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = train;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunStrata(args, dir.path());
  };
  for (const auto& [extra, fragments] :
       {std::pair{std::vector<std::string>{"--host-mem", "1K"},
                  std::vector<std::string>{"--host-mem"}},
        std::pair{std::vector<std::string>{"--host-mem", "32K", "--page-size", "16K",
                                           "--nvme-dir", dir.sub("nvme")},
                  std::vector<std::string>{"--host-mem", "--page-size"}}}) {
    const RunResult r = run(extra);
    ASSERT_NE(r.exit_code, -1) << "crashed: " << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const std::string first = r.err.substr(0, r.err.find('\n'));
    EXPECT_EQ(first.rfind("strata: ", 0), 0u) << r.err;
    for (const std::string& f : fragments) {
      EXPECT_NE(first.find(f), std::string::npos) << "missing '" << f << "' in: " << first;
    }
  }
}

}  // namespace
}  // namespace strata::testing
