// stress/fault_spec.h: the SPEC in STRATA_INJECT_FAULTS arms a child `strata train`'s injector item
// by item, and a bad SPEC arms nothing and is a usage error naming the variable (exit 2 from the
// CLI). The product's train command has no flag for it.
#include "stress/fault_spec.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

using storage::FaultInjector;
using storage::IoOp;
using stress::ParseFaultSpec;

TEST(FaultSpec, EioAfterFailsExactlyTheNthRequest) {
  FaultInjector f;
  ASSERT_TRUE(ParseFaultSpec("eio-after=3", &f).ok());
  EXPECT_EQ(f.on_request(IoOp::kRead, 4096), 0);
  EXPECT_EQ(f.on_request(IoOp::kWrite, 4096), 0);
  EXPECT_EQ(f.on_request(IoOp::kRead, 4096), EIO);
  EXPECT_EQ(f.on_request(IoOp::kRead, 4096), 0);
  EXPECT_EQ(f.injected(), 1u);
}

TEST(FaultSpec, EnospcAfterBytesTakesASize) {
  FaultInjector f;
  ASSERT_TRUE(ParseFaultSpec("enospc-after=8K", &f).ok());
  EXPECT_EQ(f.on_request(IoOp::kWrite, 8192), 0);
  EXPECT_EQ(f.on_request(IoOp::kRead, 8192), 0) << "reads never run out of space";
  EXPECT_EQ(f.on_request(IoOp::kWrite, 4096), ENOSPC);
}

TEST(FaultSpec, SeveralItemsArmTogether) {
  FaultInjector f;
  ASSERT_TRUE(ParseFaultSpec("eagain=2,latency-us=150,short-io", &f).ok());
  EXPECT_EQ(f.latency_ns(), 150000u);
  EXPECT_TRUE(f.short_transfers());
  EXPECT_EQ(f.on_request(IoOp::kRead, 4096), EAGAIN);
  EXPECT_EQ(f.on_request(IoOp::kRead, 4096), EAGAIN);
  EXPECT_EQ(f.on_request(IoOp::kRead, 4096), 0);
}

TEST(FaultSpec, BadSpecsAreUsageErrorsThatArmNothing) {
  for (const char* spec : {"", "eio-after=0", "eio-after=", "eio-after=x", "eio-after=3x",
                           "eio-after=-1", "bogus=1", "short-io=1", "latency-us",
                           "eagain=2,,short-io", "eagain=2,nonsense", "enospc-after=lots"}) {
    SCOPED_TRACE(spec);
    FaultInjector f;
    const Status st = ParseFaultSpec(spec, &f);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("STRATA_INJECT_FAULTS"), std::string::npos) << st.message();
    EXPECT_EQ(f.on_request(IoOp::kWrite, 4096), 0) << "a bad spec armed a fault";
    EXPECT_FALSE(f.short_transfers());
  }
}

// The shell prefix that puts SPEC in the environment of the strata that RunStrata starts.
std::string WithFaults(const std::string& spec) {
  return "export STRATA_INJECT_FAULTS=" + ShellQuote(spec) + ";";
}

TEST(FaultSpecCli, ABadSpecExitsTwoNamingTheVariable) {
  ScratchDir dir("fault_spec");
  const RunResult r =
      RunStrata({"train", "--model", "tiny", "--steps", "1", "--batch", "1", "--threads", "1"},
                dir.path(), WithFaults("eio-after=zero"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("strata: error: STRATA_INJECT_FAULTS 'eio-after=zero'"), std::string::npos)
      << r.err;
}

// Fault injection is a test seam, not a flag of the product's train command (issue 32).
TEST(FaultSpecCli, TrainHasNoInjectFaultsFlag) {
  ScratchDir dir("fault_spec");
  const RunResult help = RunStrata({"train", "--help"}, dir.path());
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.find("inject"), std::string::npos) << help.out;
  const RunResult r = RunStrata({"train", "--model", "tiny", "--steps", "1", "--batch", "1",
                                 "--threads", "1", "--inject-faults", "eio-after=1"},
                                dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--inject-faults"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("strata: inject-faults: "), std::string::npos) << r.err;
}

// A run whose disk fails stops with exit 1 and one error line, and reports that the fault hit.
TEST(FaultSpecCli, AFailingDiskStopsTheRunWithOneLine) {
  ScratchDir dir("fault_spec");
  const RunResult r = RunStrata(
      {"train", "--model", "tiny", "--steps", "3", "--batch", "2", "--seq", "32", "--threads",
       "1", "--page-size", "16K", "--host-mem", "640K", "--params-on", "nvme", "--optimizer-on",
       "nvme", "--nvme-dir", dir.sub("nvme"), "--ckpt-dir", dir.path() + "/ckpt", "--ckpt-every",
       "1", "--log-level", "warn"},
      dir.path(), WithFaults("enospc-after=64K"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("strata: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("strata: inject-faults: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("strata: inject-faults: 0 "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::testing
