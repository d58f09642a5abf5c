// `strata bench parallel` (bench/bench_parallel.cc): with tiny settings, one JSON object on stdout
// with every field and sane values; usage errors exit 2 before anything is launched.
#include <gtest/gtest.h>

#include <algorithm>
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
  std::vector<std::string> args = {
      "bench",     "parallel", "--json",  "--mpirun", kMpirun,
      "--timeout", "60",       "--sizes", "64K,256K", "--collective-rounds",
      "3",         "--model",  "tiny",    "--batch",  "8",
      "--seq",     "32",       "--steps", "2",        "--warmup-steps",
      "1",         "--rounds", "1"};
  args.insert(args.end(), {"--shard-rounds", "1", "--overlap-rounds", "1"});  // 3 and 4
  // 5: tiny's state per rank is 640 KiB with its 16K pages when blocks 0 and 3 are replicated
  // (tests/tools/train_dp_test.cc), so auto has a choice to make.
  args.insert(args.end(),
              {"--osdp-rounds", "1", "--osdp-host-mem", "640K", "--osdp-page-size", "16K"});
  args.insert(args.end(), {"--tp-rounds", "1"});  // 6: tiny's 2 heads and 256 tokens split in 2
  args.insert(args.end(), {"--pp-rounds", "1"});  // 7 and 8: tiny's 2 blocks, one per stage
  const RunResult r = RunStrata(args, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.out.empty()) << r.err;
  EXPECT_EQ(r.out.front(), '{') << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line on stdout: " << r.out;
  for (const char* figure :
       {"collective_efficiency", "dp_scaling", "shard_cost", "comm_overlap", "osdp_vs_zero3",
        "tp_efficiency", "tp_allreduce_share", "pipeline_bubble", "schedule_memory"}) {
    EXPECT_NE(r.err.find(figure), std::string::npos) << figure << " in the table: " << r.err;
  }
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* field :
       {"dp_scaling", "dp2_tokens_per_s", "dp1_tokens_per_s", "collective_efficiency",
        "collective_efficiency_all_gather", "collective_efficiency_reduce_scatter", "cpu_cores",
        "shard_cost", "shard_all_tokens_per_s", "shard_none_tokens_per_s", "shard_gpu_mem",
        "shard_host_mem", "comm_overlap", "comm_overlap_step_s", "comm_overlap_comm_only_s",
        "comm_overlap_compute_only_s", "osdp_vs_zero3", "osdp_auto_step_s", "osdp_all_step_s",
        "osdp_predicted_auto_step_s", "osdp_predicted_all_sharded_step_s",
        "osdp_predicted_all_replicated_step_s", "osdp_predicted_ratio", "osdp_gpu_mem",
        "osdp_host_mem", "osdp_page_size", "tp_efficiency", "tp2_tokens_per_s", "tp1_tokens_per_s",
        "tp_allreduce_share", "tp2_step_s", "tp2_compute_comm_s"}) {
    ExpectPositive(j, field);
  }
  for (const char* rounds :
       {"dp_scaling_rounds", "shard_cost_rounds", "shard_all_tokens_per_s_rounds",
        "shard_none_tokens_per_s_rounds", "shard_first_rounds", "comm_overlap_rounds",
        "comm_overlap_step_s_rounds", "comm_overlap_comm_only_s_rounds",
        "comm_overlap_compute_only_s_rounds", "comm_overlap_compute_only_process_s_rounds",
        "comm_overlap_order_rounds", "osdp_vs_zero3_rounds", "osdp_auto_step_s_rounds",
        "osdp_all_step_s_rounds", "osdp_predicted_auto_step_s_rounds",
        "osdp_predicted_all_sharded_step_s_rounds", "osdp_predicted_ratio_rounds",
        "osdp_first_rounds", "osdp_decision_rounds", "tp_efficiency_rounds",
        "tp_allreduce_share_rounds", "tp2_tokens_per_s_rounds", "tp1_tokens_per_s_rounds",
        "tp2_step_s_rounds", "tp2_compute_comm_s_rounds", "tp_first_rounds"}) {
    ASSERT_TRUE(j.contains(rounds) && j[rounds].is_array()) << rounds << " in " << r.out;
    EXPECT_EQ(j[rounds].size(), 1u) << rounds;
  }
  for (const char* field :
       {"pipeline_bubble", "pipeline_ideal_step_s", "pp2_step_s", "pp1_compute_s",
        "pp2_compute_comm_s", "pp2_compute_comm_share", "pp_stage_imbalance", "schedule_memory",
        "schedule_memory_gpipe_activation_bytes", "schedule_memory_1f1b_activation_bytes"}) {
    ExpectPositive(j, field);
  }
  for (const char* rounds :
       {"pipeline_bubble_rounds", "pp2_step_s_rounds", "pipeline_ideal_step_s_rounds",
        "pp1_compute_s_rounds", "pp1_compute_process_s_rounds", "pp2_compute_comm_s_rounds",
        "pp_first_rounds", "pp_stages_rounds"}) {
    ASSERT_TRUE(j.contains(rounds) && j[rounds].is_array()) << rounds << " in " << r.out;
    EXPECT_EQ(j[rounds].size(), 1u) << rounds;
  }
  EXPECT_EQ(j["comm_overlap_compute_only_process_s_rounds"][0].size(), 2u) << "two processes";
  EXPECT_DOUBLE_EQ(j["comm_overlap"].get<double>(),
                   j["comm_overlap_step_s"].get<double>() /
                       std::max(j["comm_overlap_compute_only_s"].get<double>(),
                                j["comm_overlap_comm_only_s"].get<double>()));
  EXPECT_DOUBLE_EQ(j["osdp_vs_zero3"].get<double>(),
                   j["osdp_all_step_s"].get<double>() / j["osdp_auto_step_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["osdp_predicted_ratio"].get<double>(),
                   j["osdp_predicted_all_sharded_step_s"].get<double>() /
                       j["osdp_predicted_auto_step_s"].get<double>());
  EXPECT_EQ(j["osdp_first_rounds"][0], "auto");
  EXPECT_DOUBLE_EQ(j["tp_efficiency"].get<double>(),
                   j["tp2_tokens_per_s"].get<double>() / j["tp1_tokens_per_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["tp_allreduce_share"].get<double>(),
                   j["tp2_compute_comm_s"].get<double>() / j["tp2_step_s"].get<double>());
  EXPECT_LT(j["tp_allreduce_share"].get<double>(), 1.0);
  EXPECT_EQ(j["tp_first_rounds"][0], "tp2");
  // 7: the pp2 step over T1 / 2 x (8 + 2 - 1) / 8, T1 the slower of the single-rank pair.
  EXPECT_DOUBLE_EQ(j["pipeline_bubble"].get<double>(),
                   j["pp2_step_s"].get<double>() / j["pipeline_ideal_step_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["pipeline_ideal_step_s"].get<double>(),
                   j["pp1_compute_s"].get<double>() / 2 * 9 / 8);
  ASSERT_EQ(j["pp1_compute_process_s_rounds"][0].size(), 2u) << "two processes";
  EXPECT_DOUBLE_EQ(j["pp1_compute_s"].get<double>(),
                   std::max(j["pp1_compute_process_s_rounds"][0][0].get<double>(),
                            j["pp1_compute_process_s_rounds"][0][1].get<double>()));
  EXPECT_EQ(j["pp_first_rounds"][0], "pp2");
  EXPECT_EQ(j["pp_micro_batches"], 8);
  EXPECT_EQ(j["pp_micro_batch"], 1);
  EXPECT_EQ(j["pp_stage_predicted_s"].size(), 2u) << "one time per stage";
  EXPECT_GE(j["pp_stage_imbalance"].get<double>(), 1.0);
  EXPECT_LT(j["pp2_compute_comm_share"].get<double>(), 1.0);
  // 8: stage 0 holds 2 micro-batches' activations under 1F1B, all 8 under GPipe.
  EXPECT_DOUBLE_EQ(j["schedule_memory"].get<double>(),
                   j["schedule_memory_gpipe_activation_bytes"].get<double>() /
                       j["schedule_memory_1f1b_activation_bytes"].get<double>());
  EXPECT_GT(j["schedule_memory"].get<double>(), 1.0);
  EXPECT_EQ(j["osdp_host_mem"].get<uint64_t>(), 640u << 10);
  EXPECT_EQ(j["osdp_page_size"].get<uint64_t>(), 16u << 10);
  ASSERT_TRUE(j["collectives"].is_array());
  ASSERT_EQ(j["collectives"].size(), 4u) << "2 sizes x 2 ops";
  for (const nlohmann::json& c : j["collectives"]) {
    for (const char* field : {"bytes", "strata_bytes_per_s", "mpi_bytes_per_s", "ratio"}) {
      ExpectPositive(c, field);
    }
    EXPECT_TRUE(c["op"] == "all_gather" || c["op"] == "reduce_scatter") << c.dump();
    EXPECT_TRUE(c["outputs_equal"].get<bool>()) << c.dump();
  }
  for (const char* field :
       {"date", "dp2_command", "dp1_command", "collectives_command", "shard_all_command",
        "shard_none_command", "comm_overlap_step_command", "comm_overlap_comm_only_command",
        "comm_overlap_compute_only_command", "osdp_auto_command", "osdp_all_command",
        "osdp_decision", "osdp_choice", "pp2_command", "pp1_command", "pp_stages",
        "schedule_memory_gpipe_command", "schedule_memory_1f1b_command"}) {
    ASSERT_TRUE(j.contains(field) && j[field].is_string()) << field << " in " << r.out;
  }
  EXPECT_NE(j["dp2_command"].get<std::string>().find("mpirun"), std::string::npos);
  EXPECT_NE(j["dp2_command"].get<std::string>().find("--dp 2"), std::string::npos);
  const auto has = [&](const char* field, const char* part) {
    EXPECT_NE(j[field].get<std::string>().find(part), std::string::npos) << field << ": " << part;
  };
  has("shard_all_command", "--shard all");
  has("shard_all_command", "--engine paged");
  has("shard_none_command", "--shard none");
  has("shard_none_command", "--engine paged");
  has("comm_overlap_step_command", "--shard all");
  has("comm_overlap_comm_only_command", "--movement-only");
  has("comm_overlap_compute_only_command", "--batch 4");  // the per-rank batch
  has("comm_overlap_compute_only_command", "--trace");
  EXPECT_EQ(j["comm_overlap_compute_only_command"].get<std::string>().find("mpirun"),
            std::string::npos)
      << "compute-only runs without collectives";
  has("osdp_auto_command", "--shard auto");
  has("osdp_auto_command", "--host-mem 640K");
  has("osdp_auto_command", "--page-size 16K");
  has("osdp_auto_command", "--log-level info");  // its first line, the choice, is an info line
  has("osdp_all_command", "--shard all");
  has("osdp_all_command", "--host-mem 640K");
  has("osdp_all_command", "--page-size 16K");
  // The decision names each of tiny's 4 blocks; the choice holds the prediction.
  const std::string decision = j["osdp_decision"].get<std::string>();
  EXPECT_NE(decision.find("0"), std::string::npos) << decision;
  EXPECT_NE(decision.find("3: "), std::string::npos) << decision;
  EXPECT_TRUE(decision.find("replicated") != std::string::npos ||
              decision.find("sharded") != std::string::npos)
      << decision;
  EXPECT_EQ(j["osdp_decision_rounds"][0], decision);
  has("osdp_choice", "--shard auto: predicted step");
  has("osdp_choice", "every block sharded");
  has("pp2_command", "--pp 2");
  has("pp2_command", "--schedule 1f1b");
  has("pp2_command", "--pp-partition auto");
  has("pp2_command", "--micro-batch 1");
  has("pp2_command", "--threads 1");
  has("pp2_command", "--log-level info");  // its first line, the stages, is an info line
  has("pp1_command", "--micro-batch 1");
  has("pp1_command", "--threads 1");
  has("pp1_command", "--trace");
  EXPECT_EQ(j["pp1_command"].get<std::string>().find("mpirun"), std::string::npos)
      << "the single-rank compute time runs without mpirun";
  has("pp_stages", "0: blocks 1-1 + embedding");
  has("pp_stages", "1: blocks 2-2 + head");
  EXPECT_EQ(j["pp_stages_rounds"][0], j["pp_stages"]);
  has("schedule_memory_gpipe_command", "--schedule gpipe");
  has("schedule_memory_1f1b_command", "--schedule 1f1b");
}

TEST(BenchParallel, BadFlagsAreUsageErrors) {
  ScratchDir scratch("bench_parallel_bad");
  const std::string dir = scratch.path();
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--rounds", "0"},
        {"--collective-rounds", "0"},
        {"--steps", "0"},
        {"--batch", "3"},
        {"--sizes", "1001"},
        {"--sizes", "12X"},
        {"--shard-rounds", "0"},
        {"--overlap-rounds", "0"},
        {"--osdp-rounds", "0"},
        {"--tp-rounds", "0"},
        {"--pp-rounds", "0"},
        {"--batch", "12"},  // not 8 micro-batches
        {"--osdp-host-mem", "0"},
        {"--osdp-page-size", "12X"},
        {"--gpu-mem", "12X"},
        {"--host-mem", "0"},
        {"--no-collectives", "--no-dp", "--no-shard-cost", "--no-comm-overlap", "--no-osdp",
         "--no-tp", "--no-pp"}}) {
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
