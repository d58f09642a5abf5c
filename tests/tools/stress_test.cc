// `strata stress` end to end: the soak runs its configurations with zero data lost and zero
// mismatches, and really injects faults and kills; and its checker fails a run that differs.
// STRATA_STRESS_MINUTES sets the soak's length (default 1; the stress label runs 30).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

nlohmann::json LastJsonLine(const std::string& out) {
  const size_t start = out.rfind('{');
  if (start == std::string::npos) return nlohmann::json();
  return nlohmann::json::parse(out.substr(start), nullptr, /*allow_exceptions=*/false);
}

TEST(StressSoak, NothingLostNothingSilent) {
  const char* env = std::getenv("STRATA_STRESS_MINUTES");
  const std::string minutes = env != nullptr ? env : "1";
  ScratchDir dir("stress");
  const RunResult r = RunStrata({"stress", "--minutes", minutes, "--json", "--nvme-dir",
                                 dir.path()},
                                dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = LastJsonLine(r.out);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_GE(j["configurations"].get<long>(), 1);
  EXPECT_EQ(j["data_lost"].get<long>(), 0) << r.err;
  EXPECT_EQ(j["mismatches"].get<long>(), 0) << r.err;
  EXPECT_EQ(j["failures"].get<long>(), 0) << r.err;
  EXPECT_GT(j["kills"].get<long>(), 0) << r.err;
  EXPECT_GT(j["faults_injected"].get<long>(), 0) << r.err;
  EXPECT_GT(j["pages_verified"].get<long>(), 0) << r.err;
  RecordProperty("summary", j.dump());
}

// The checker is not vacuous: paged runs with another --lr, or weights with one flipped byte,
// are mismatches and fail the soak.
TEST(StressSoak, ACheckerThatSeesEveryDifference) {
  for (const char* sabotage : {"lr", "weights"}) {
    SCOPED_TRACE(sabotage);
    ScratchDir dir("stress_sabotage");
    const RunResult r = RunStrata({"stress", "--seed", "3", "--max-configs", "1", "--json",
                                   "--nvme-dir", dir.path(), "--sabotage", sabotage},
                                  dir.path());
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const nlohmann::json j = LastJsonLine(r.out);
    ASSERT_TRUE(j.is_object()) << r.out << r.err;
    EXPECT_EQ(j["configurations"].get<long>(), 1);
    EXPECT_GT(j["mismatches"].get<long>(), 0) << r.err;
    EXPECT_NE(r.err.find("replay with --seed 3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("attempt 1: "), std::string::npos) << "no command lines: " << r.err;
  }
}

// Loop devices and mounts whose image or mount point lies under `dir`: what a run left behind.
std::vector<std::string> MountsUnder(const std::string& dir) {
  std::vector<std::string> left;
  std::istringstream mounts(ReadWholeFile("/proc/mounts"));
  for (std::string line; std::getline(mounts, line);) {
    if (line.find(dir) != std::string::npos) left.push_back(line);
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block", ec)) {
    const std::string backing = ReadWholeFile(e.path().string() + "/loop/backing_file");
    if (backing.find(dir) != std::string::npos) left.push_back(e.path().string() + ": " + backing);
  }
  return left;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Issue 29: the soak draws a real disk filling up mid-run (a loop-mounted ext4 of the
// configuration's own); the attempt must stop with ENOSPC's message, never abort, and the run
// resumed after the space is freed must end bit-identical to the in-memory one. Every mount and
// loop device is gone afterwards.
TEST(StressSoak, DiskFillsOnALoopMountStopCleanlyAndResumeExactly) {
  ScratchDir dir("stress_fill");
  const RunResult r = RunStrata({"stress", "--seed", "29", "--max-configs", "3", "--always-fill",
                                 "--json", "--nvme-dir", dir.path()},
                                dir.path());
  if (r.err.find("no disk fills are drawn") != std::string::npos) {
    GTEST_SKIP() << r.err.substr(0, r.err.find('\n', r.err.find("no disk fills")));
  }
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = LastJsonLine(r.out);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_EQ(j["configurations"].get<long>(), 3);
  EXPECT_GE(j["disk_fills"].get<long>(), 1) << r.err;
  EXPECT_NE(r.err.find("steps detected"), std::string::npos)
      << "no fill stopped a run with ENOSPC's message: " << r.err;
  EXPECT_EQ(j["data_lost"].get<long>(), 0) << r.err;
  EXPECT_EQ(j["mismatches"].get<long>(), 0) << r.err;
  EXPECT_EQ(j["failures"].get<long>(), 0) << r.err;
  EXPECT_EQ(MountsUnder(dir.path()), std::vector<std::string>{});
}

// Where the disk cannot be loop-mounted (here: no mkfs.ext4, losetup or mount on PATH), the soak
// says so once and draws everything else.
TEST(StressSoak, WithoutLoopMountsItSaysSoOnceAndDrawsTheRest) {
  ScratchDir dir("stress_nofill");
  const RunResult r = RunStrata({"stress", "--seed", "29", "--max-configs", "2", "--always-fill",
                                 "--json", "--nvme-dir", dir.path()},
                                dir.path(), "PATH=/nonexistent");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "no disk fills are drawn"), 1u) << r.err;
  const nlohmann::json j = LastJsonLine(r.out);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_EQ(j["configurations"].get<long>(), 2);
  EXPECT_EQ(j["disk_fills"].get<long>(), 0);
  EXPECT_EQ(j["failures"].get<long>(), 0) << r.err;
}

// Issue 29: the soak resumes a configuration's one-process run as a job of 2 ranks under mpirun;
// it must be refused in order (exit 2, one line naming a one-process run) and create nothing,
// and the run then resumes as before and ends bit-identical.
TEST(StressSoak, ARankCountChangeOnResumeIsRefusedAndTouchesNothing) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir dir("stress_ranks");
  const RunResult r =
      RunStrata({"stress", "--seed", "29", "--max-configs", "3", "--always-rank-change", "--json",
                 "--nvme-dir", dir.path()},
                dir.path(), "PATH=" + std::filesystem::path(kMpirun).parent_path().string() +
                                ":$PATH;");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = LastJsonLine(r.out);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_GE(j["rank_changes"].get<long>(), 1) << r.err;
  EXPECT_NE(r.err.find("2 ranks refused"), std::string::npos) << r.err;
  EXPECT_EQ(j["data_lost"].get<long>(), 0) << r.err;
  EXPECT_EQ(j["mismatches"].get<long>(), 0) << r.err;
  EXPECT_EQ(j["failures"].get<long>(), 0) << r.err;
}

TEST(StressSoak, BadFlagsAreUsageErrors) {
  ScratchDir dir("stress_flags");
  EXPECT_EQ(RunStrata({"stress", "--minutes", "-1"}, dir.path()).exit_code, 2);
  EXPECT_EQ(RunStrata({"stress", "--sabotage", "x"}, dir.path()).exit_code, 2);
}

}  // namespace
}  // namespace strata::testing
