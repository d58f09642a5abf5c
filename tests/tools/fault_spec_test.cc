// stress/fault_spec.h: the SPEC of `strata train --inject-faults` arms the injector item by item,
// and a bad SPEC arms nothing and is a usage error naming the flag (exit 2 from the CLI).
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
    EXPECT_NE(st.message().find("--inject-faults"), std::string::npos) << st.message();
    EXPECT_EQ(f.on_request(IoOp::kWrite, 4096), 0) << "a bad spec armed a fault";
    EXPECT_FALSE(f.short_transfers());
  }
}

TEST(FaultSpecCli, ABadSpecExitsTwoNamingTheFlag) {
  ScratchDir dir("fault_spec");
  const RunResult r = RunStrata({"train", "--model", "tiny", "--steps", "1", "--batch", "1",
                                 "--threads", "1", "--inject-faults", "eio-after=zero"},
                                dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("strata: error: --inject-faults"), std::string::npos) << r.err;
}

TEST(FaultSpecCli, TheFlagIsHiddenFromHelp) {
  ScratchDir dir("fault_spec");
  const RunResult r = RunStrata({"train", "--help"}, dir.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("--inject-faults"), std::string::npos);
}

// A run whose disk fails stops with exit 1 and one error line, and reports that the fault hit.
TEST(FaultSpecCli, AFailingDiskStopsTheRunWithOneLine) {
  ScratchDir dir("fault_spec");
  const RunResult r = RunStrata(
      {"train", "--model", "tiny", "--steps", "3", "--batch", "2", "--seq", "32", "--threads",
       "1", "--page-size", "16K", "--host-mem", "640K", "--params-on", "nvme", "--optimizer-on",
       "nvme", "--nvme-dir", dir.sub("nvme"), "--ckpt-dir", dir.path() + "/ckpt", "--ckpt-every",
       "1", "--log-level", "warn", "--inject-faults", "enospc-after=64K"},
      dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("strata: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("strata: inject-faults: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("strata: inject-faults: 0 "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::testing
