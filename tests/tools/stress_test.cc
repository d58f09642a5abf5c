// `strata stress` end to end: the soak runs its configurations with zero data lost and zero
// mismatches, and really injects faults and kills; and its checker fails a run that differs.
// STRATA_STRESS_MINUTES sets the soak's length (default 1; the stress label runs 30).
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

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

TEST(StressSoak, BadFlagsAreUsageErrors) {
  ScratchDir dir("stress_flags");
  EXPECT_EQ(RunStrata({"stress", "--minutes", "-1"}, dir.path()).exit_code, 2);
  EXPECT_EQ(RunStrata({"stress", "--sabotage", "x"}, dir.path()).exit_code, 2);
}

}  // namespace
}  // namespace strata::testing
