// `strata bench offload` on small shapes: exits 0 and prints one JSON object on stdout with the
// five measurements' fields (the numbers themselves are the benchmark's, not the test's; run 5's
// must be positive, its tiny model's state on NVMe).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

TEST(BenchOffload, SmallShapesPrintEveryField) {
  ScratchDir scratch("bench_offload");
  const std::string dir = scratch.path();
  RunResult r = RunStrata({"bench", "offload", "--json", "--nvme-dir", dir + "/nvme", "--model",
                           "small", "--batch", "2", "--seq", "16", "--steps", "1",
                           "--warmup-steps", "1", "--threads", "1", "--overlap-layers", "2",
                           "--overlap-rounds", "2",
                           "--cost-layers", "2",
                           "--cost-embd", "64", "--cost-heads", "2", "--cost-batch", "2",
                           "--cost-seq", "16", "--cost-rounds", "2", "--scale-layers", "96",
                           "--scale-embd", "32", "--scale-heads", "2", "--scale-batch", "1",
                           "--scale-seq", "16", "--scale-steps", "2", "--page-size", "64K",
                           "--no-fio", "--eviction-steps", "1", "--no-eviction-demo",
                           "--amp-layers", "4", "--amp-embd", "32", "--amp-heads", "2",
                           "--amp-batch", "2", "--amp-micro-batch", "1", "--amp-seq", "16",
                           "--amp-gpu-mem", "352K", "--amp-host-mem", "512K",
                           "--amp-warmup-steps", "1", "--amp-steps", "1", "--amp-rounds", "2"},
                          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{') << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line on stdout: " << r.out;
  for (const char* field :
       {"\"overlap_step_s\":", "\"overlap_compute_only_s\":", "\"overlap_movement_only_s\":",
        "\"overlap_ratio\":", "\"overlap_target\":", "\"offload_tokens_per_s\":",
        "\"in_memory_tokens_per_s\":", "\"offload_cost_ratio\":", "\"offload_cost_target\":",
        "\"offload_model\":", "\"offload_recompute_layers\":", "\"cpu_cores\":",
        "\"in_memory_cpu_s_per_step\":", "\"offload_cpu_s_per_step\":",
        "\"offload_cost_cpu_bound\":", "\"overlap_cpu_s_per_step\":",
        "\"overlap_movement_only_cpu_s_per_step\":", "\"overlap_movement_to_compute\":",
        "\"overlap_clipped_step_factor\":", "\"offload_cost_ratio_shared_cores\":",
        "\"overlap_step_factor_rounds\":[", "\"overlap_clipped_step_factor_rounds\":[",
        "\"scale_state_bytes\":", "\"scale_gpu_mem\":", "\"scale_host_mem\":",
        "\"scale_losses\":[", "\"scale_nvme_bytes_per_step\":", "\"scale_nvme_bytes_per_s\":",
        "\"scale_nvme_vs_fio_ratio\":null", "\"eviction_steps\":1",
        "\"host_eviction_cost_belady_nvme_bytes_per_step\":",
        "\"host_eviction_cost_lru_nvme_bytes_per_step\":",
        "\"host_eviction_cost_belady_vs_lru_ratio\":",
        "\"host_eviction_demo_belady_vs_lru_ratio\":null", "\"amp_params_on\":\"nvme\"",
        "\"amp_optimizer_on\":\"nvme\"", "\"nvme_read_amplification_rounds\":[",
        "\"nvme_write_amplification_rounds\":[", "\"scale_vs_memory_rounds\":[",
        "\"scale_vs_memory_losses_equal\":true", "\"offload_cost_ratio_shared_cores_rounds\":[",
        "\"offload_cost_ratio_shared_cores_no_clip\":"}) {
    EXPECT_NE(r.out.find(field), std::string::npos) << field << " missing in " << r.out;
  }
  // Run 5's figures: present and positive (the tiny model puts its state on NVMe).
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* field :
       {"nvme_read_amplification", "nvme_write_amplification", "nvme_read_bytes_per_step",
        "nvme_write_bytes_per_step", "nvme_min_read_bytes_per_step",
        "nvme_min_write_bytes_per_step", "scale_vs_memory",
        "scale_vs_memory_paged_tokens_per_s", "scale_vs_memory_in_memory_tokens_per_s",
        "scale_vs_memory_paged_step_s", "offload_cost_ratio_shared_cores_no_clip"}) {
    ASSERT_TRUE(j.contains(field) && j[field].is_number()) << field << " in " << r.out;
    EXPECT_GT(j[field].get<double>(), 0.0) << field << " in " << r.out;
  }
}

// --runs 5 alone, in a LLaMA shape (issue 33): only run 5's fields, the model a LLaMA, the paged
// run's losses the in-memory run's.
TEST(BenchOffload, RunFiveAloneInALlamaShape) {
  ScratchDir scratch("bench_offload_llama");
  const std::string& dir = scratch.path();
  RunResult r = RunStrata(
      {"bench", "offload",       "--json", "--nvme-dir",        dir,     "--threads",
       "1",     "--runs",        "5",      "--amp-arch",        "llama", "--amp-layers",
       "4",     "--amp-embd",    "32",     "--amp-heads",       "2",     "--amp-kv-heads",
       "1",     "--amp-batch",   "2",      "--amp-micro-batch", "1",     "--amp-seq",
       "16",    "--amp-gpu-mem", "512K",   "--amp-host-mem",    "512K",  "--amp-warmup-steps",
       "1",     "--amp-steps",   "1",      "--amp-rounds",      "1",     "--page-size",
       "64K",   "--no-fio"},
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.value("amp_arch", ""), "llama") << r.out;
  EXPECT_NE(j.value("amp_model", "").find("n_kv_head=1"), std::string::npos) << r.out;
  EXPECT_TRUE(j.value("scale_vs_memory_losses_equal", false)) << r.out;
  EXPECT_GT(j.value("nvme_read_amplification", 0.0), 0.0) << r.out;
  EXPECT_FALSE(j.contains("overlap_step_s")) << "run 1 did not run: " << r.out;
  EXPECT_FALSE(j.contains("offload_cost_ratio")) << "run 2 did not run: " << r.out;
}

TEST(BenchOffload, BadFlagIsUsageError) {
  ScratchDir scratch("bench_offload_bad");
  const std::string dir = scratch.path();
  RunResult r = RunStrata({"bench", "offload", "--steps", "0", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = RunStrata({"bench", "offload", "--overlap-layers", "0", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--overlap-layers"), std::string::npos) << r.err;
  r = RunStrata({"bench", "offload", "--overlap-rounds", "0", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--overlap-rounds"), std::string::npos) << r.err;
  r = RunStrata({"bench", "offload", "--eviction-steps", "0", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--eviction-steps"), std::string::npos) << r.err;
  r = RunStrata({"bench", "offload", "--amp-rounds", "0", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--amp-rounds"), std::string::npos) << r.err;
  r = RunStrata({"bench", "offload", "--cost-rounds", "0", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--cost-rounds"), std::string::npos) << r.err;
  r = RunStrata({"bench", "offload", "--runs", "4", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--runs"), std::string::npos) << r.err;
  r = RunStrata({"bench", "offload", "--runs", "6", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--runs"), std::string::npos) << r.err;
  r = RunStrata({"bench", "offload", "--amp-arch", "mamba", "--no-fio"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--amp-arch"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::testing
