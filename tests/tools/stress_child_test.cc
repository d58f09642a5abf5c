// stress/stress_child.h: a child of `strata stress` gets STRATA_INJECT_FAULTS in its environment
// only when its attempt draws a disk fault (the faults are no flag of `strata train`), even when
// the soak itself was started with the variable set; a failure report shows it.
#include "stress/stress_child.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "tests/common/scratch_dir.h"

namespace strata::stress {
namespace {

using ::strata::test_support::ScratchDir;

// Sets a variable for one test and puts back what was there.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    ::setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

const std::vector<std::string> kEchoSpec = {"-c", "echo \"[${STRATA_INJECT_FAULTS-unset}]\""};

TEST(StressChild, OnlyAnAttemptThatDrawsAFaultSeesTheVariable) {
  ScratchDir dir("stress_child");
  const ScopedVariable parent("STRATA_INJECT_FAULTS", "eio-after=1");  // the soak's own
  const Result<ChildRun> faulted =
      RunChild("/bin/sh", kEchoSpec, "latency-us=5", dir.path() + "/a.out", StopPlan{}, 30);
  ASSERT_TRUE(faulted.ok()) << faulted.status().message();
  EXPECT_EQ(faulted->output, "[latency-us=5]\n");
  const Result<ChildRun> plain =
      RunChild("/bin/sh", kEchoSpec, "", dir.path() + "/b.out", StopPlan{}, 30);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->output, "[unset]\n");
}

TEST(StressChild, TheOtherVariablesAreInherited) {
  ScratchDir dir("stress_child");
  const ScopedVariable other("STRATA_STRESS_CHILD_TEST", "kept");
  const Result<ChildRun> run = RunChild("/bin/sh", {"-c", "echo \"$STRATA_STRESS_CHILD_TEST\""},
                                        "eagain=2", dir.path() + "/a.out", StopPlan{}, 30);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->output, "kept\n");
}

TEST(StressChild, AReportShowsTheFaultsInFrontOfTheCommand) {
  EXPECT_EQ(CommandLine("/b/strata", {"train", "--steps", "2"}, "eio-after=3,short-io"),
            "STRATA_INJECT_FAULTS=eio-after=3,short-io /b/strata train --steps 2");
  EXPECT_EQ(CommandLine("/b/strata", {"train"}), "/b/strata train");
}

}  // namespace
}  // namespace strata::stress
