// `strata bench parallel` (tools/bench_parallel.cc): with tiny settings, one JSON object on stdout
// with every field and sane values; usage errors exit 2 before anything is launched.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

void ExpectPositive(const nlohmann::json& j, const char* field) {
  ASSERT_TRUE(j.contains(field) && j[field].is_number()) << field << " in " << j.dump();
  EXPECT_GT(j[field].get<double>(), 0.0) << field;
}

TEST(BenchParallel, TinyRunReportsEveryField) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("bench_parallel");
  const RunResult r =
      RunStrata({"bench",     "parallel", "--json",  "--mpirun", kMpirun,
                 "--timeout", "60",       "--sizes", "64K,256K", "--collective-rounds",
                 "3",         "--model",  "tiny",    "--batch",  "4",
                 "--seq",     "32",       "--steps", "2",        "--warmup-steps",
                 "1",         "--rounds", "1"},
                scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.out.empty()) << r.err;
  EXPECT_EQ(r.out.front(), '{') << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line on stdout: " << r.out;
  EXPECT_NE(r.err.find("collective_efficiency"), std::string::npos) << "the table: " << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* field :
       {"dp_scaling", "dp2_tokens_per_s", "dp1_tokens_per_s", "collective_efficiency",
        "collective_efficiency_all_gather", "collective_efficiency_reduce_scatter", "cpu_cores"}) {
    ExpectPositive(j, field);
  }
  ASSERT_TRUE(j["dp_scaling_rounds"].is_array());
  EXPECT_EQ(j["dp_scaling_rounds"].size(), 1u);
  ASSERT_TRUE(j["collectives"].is_array());
  ASSERT_EQ(j["collectives"].size(), 4u) << "2 sizes x 2 ops";
  for (const nlohmann::json& c : j["collectives"]) {
    for (const char* field : {"bytes", "strata_bytes_per_s", "mpi_bytes_per_s", "ratio"}) {
      ExpectPositive(c, field);
    }
    EXPECT_TRUE(c["op"] == "all_gather" || c["op"] == "reduce_scatter") << c.dump();
    EXPECT_TRUE(c["outputs_equal"].get<bool>()) << c.dump();
  }
  for (const char* field : {"date", "dp2_command", "dp1_command", "collectives_command"}) {
    ASSERT_TRUE(j.contains(field) && j[field].is_string()) << field << " in " << r.out;
  }
  EXPECT_NE(j["dp2_command"].get<std::string>().find("mpirun"), std::string::npos);
  EXPECT_NE(j["dp2_command"].get<std::string>().find("--dp 2"), std::string::npos);
  for (const char* absent : {"shard_cost", "comm_overlap", "osdp_vs_zero3"}) {
    EXPECT_FALSE(j.contains(absent)) << absent << ": needs sharding, which does not exist yet";
  }
}

TEST(BenchParallel, BadFlagsAreUsageErrors) {
  ScratchDir scratch("bench_parallel_bad");
  const std::string dir = scratch.path();
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--rounds", "0"},
                                              {"--collective-rounds", "0"},
                                              {"--steps", "0"},
                                              {"--batch", "3"},
                                              {"--sizes", "1001"},
                                              {"--sizes", "12X"},
                                              {"--no-collectives", "--no-dp"}}) {
    std::vector<std::string> args = {"bench", "parallel", "--json"};
    args.insert(args.end(), bad.begin(), bad.end());
    const RunResult r = RunStrata(args, dir);
    EXPECT_EQ(r.exit_code, 2) << bad.front() << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(bad.front()), std::string::npos) << r.err;
  }
}

TEST(BenchParallel, MissingLauncherSaysWhatToPass) {
  ScratchDir scratch("bench_parallel_mpirun");
  const RunResult r = RunStrata(
      {"bench", "parallel", "--mpirun", scratch.path() + "/no-such-mpirun"}, scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--mpirun"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::testing
