// `strata train --arch llama` (issue 33): a LLaMA trains through the model interface in memory,
// data-parallel ranks give one rank's bits, --init reads a Hugging Face directory back bit for
// bit, and bad input is one line with the documented exit code and nothing written. The
// comparison with PyTorch is tests/reference/llama_reference.py.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

// llama-tiny (2 layers, 4 heads over 2 kv heads) for 6 steps, clipped at 1.0.
std::vector<std::string> LlamaArgs(const std::string& dir, const std::string& tag) {
  return {"train",     "--model",   "llama-tiny", "--batch",      "8",
          "--seq",     "32",        "--steps",    "6",            "--lr",
          "1e-3",      "--threads", "1",          "--grad-clip",  "1.0",
          "--log-json", dir + "/" + tag + ".jsonl", "--export", dir + "/" + tag + ".safetensors"};
}

std::vector<std::string> Losses(const std::string& path) {
  std::vector<std::string> losses;
  std::istringstream lines(ReadWholeFile(path));
  std::string line;
  while (std::getline(lines, line)) losses.push_back(nlohmann::json::parse(line).at("loss").dump());
  return losses;
}

// step -> loss, the last line of each step winning (a resumed run logs its steps again).
std::map<long, std::string> StepLosses(const std::string& path) {
  std::map<long, std::string> losses;
  std::istringstream lines(ReadWholeFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    losses[j.at("step").get<long>()] = j.at("loss").dump();
  }
  return losses;
}

TEST(TrainLlama, TrainsInMemoryAndTheLossFalls) {
  ScratchDir scratch("train_llama");
  const std::string& dir = scratch.path();
  std::vector<std::string> args = LlamaArgs(dir, "run");
  args[8] = "20";  // --steps
  const RunResult r = RunStrata(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("llama(n_layer=2"), std::string::npos) << r.err;
  const std::vector<std::string> losses = Losses(dir + "/run.jsonl");
  ASSERT_EQ(losses.size(), 20u);
  EXPECT_LT(std::stod(losses.back()), std::stod(losses.front()) - 0.3)
      << losses.front() << " -> " << losses.back();
}

// Micro-batches add up as the interface's rule says: ranks of one micro-batch each give the bits
// of one rank running them all in memory (Note [Data-parallel gradients]), untied and tied, on
// every grid a LLaMA runs: data-parallel in memory and paged with sharded state, whole or with
// its MLP's weights split in 2 or 4 slices (Note [Linears in row chunks]), and a pipeline of two
// stages under both schedules.
struct LlamaGrid {
  std::string name;
  std::vector<std::string> flags;
};

void PrintTo(const LlamaGrid& g, std::ostream* os) { *os << g.name; }

class TrainLlamaDp : public ::testing::TestWithParam<std::tuple<bool, LlamaGrid>> {};

TEST_P(TrainLlamaDp, BitIdenticalToOneRankWithAMicroBatchPerRank) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  const auto& [tied, grid] = GetParam();
  ScratchDir scratch("train_llama_dp");
  const std::string& dir = scratch.path();
  std::vector<std::string> one = LlamaArgs(dir, "one"), dp = LlamaArgs(dir, "dp");
  one.insert(one.end(), {"--engine", "memory", "--micro-batch", "4"});
  dp.insert(dp.end(), grid.flags.begin(), grid.flags.end());
  for (std::string& f : dp) {
    if (f == "NVME") f = dir + "/nvme";  // the scratch directory's
  }
  if (tied) {
    one.push_back("--tie-embeddings");
    dp.push_back("--tie-embeddings");
  }
  const RunResult r1 = RunStrata(one, dir);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  const RunResult r2 = RunMpi({dp}, 2, dir);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const std::vector<std::string> a = Losses(dir + "/one.jsonl"), b = Losses(dir + "/dp.jsonl");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(ReadWholeFile(dir + "/one.safetensors") == ReadWholeFile(dir + "/dp.safetensors"))
      << "the exported weights differ";
}

INSTANTIATE_TEST_SUITE_P(
    Grids, TrainLlamaDp,
    ::testing::Combine(
        ::testing::Bool(),
        ::testing::Values(
            LlamaGrid{"dp_memory", {"--dp", "2", "--shard", "none"}},
            LlamaGrid{"dp_paged_sharded",
                      {"--dp", "2", "--shard", "all", "--engine", "paged", "--page-size", "8K"}},
            LlamaGrid{"dp_paged_auto", {"--dp", "2", "--shard", "auto", "--engine", "paged"}},
            LlamaGrid{"dp_paged_split2",
                      {"--dp", "2", "--shard", "all", "--engine", "paged", "--split-ops", "2"}},
            LlamaGrid{"dp_paged_split4_nvme",
                      {"--dp", "2", "--shard", "all", "--engine", "paged", "--split-ops", "4",
                       "--host-mem", "256K", "--page-size", "8K", "--params-on", "nvme",
                       "--nvme-dir", "NVME"}},
            LlamaGrid{"pp_gpipe", {"--pp", "2", "--schedule", "gpipe", "--micro-batch", "4"}},
            LlamaGrid{"pp_1f1b_auto",
                      {"--pp", "2", "--schedule", "1f1b", "--pp-partition", "auto", "--micro-batch",
                       "4"}})),
    [](const auto& info) {
      return std::get<1>(info.param).name + (std::get<0>(info.param) ? "_tied" : "_untied");
    });

// Paged to NVMe with a checkpoint after every step, killed (SIGKILL) after step 3 and resumed:
// the resumed steps and the exported weights are the uninterrupted run's bits.
TEST(TrainLlamaPaged, KilledAndResumedFromNvmeGivesTheUninterruptedBits) {
  ScratchDir scratch("train_llama_kill");
  const std::string& dir = scratch.path();
  auto args = [&](const std::string& tag, const std::string& nvme) {
    std::filesystem::create_directories(dir + "/" + nvme);
    std::vector<std::string> a = LlamaArgs(dir, tag);
    a.insert(a.end(), {"--nvme-dir", dir + "/" + nvme, "--params-on", "nvme", "--optimizer-on",
                       "nvme", "--host-mem", "256K", "--page-size", "8K", "--ckpt-dir",
                       dir + "/" + nvme + "_ckpt", "--ckpt-every", "1"});
    return a;
  };
  const RunResult whole = RunStrata(args("whole", "nvme_whole"), dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::vector<std::string> killed = args("killed", "nvme_killed");
  const pid_t pid = SpawnStrata(killed, dir);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForLines(dir + "/killed.jsonl", 3, std::chrono::seconds(120)));
  ::kill(pid, SIGKILL);
  WaitStrata(pid, dir);
  EXPECT_FALSE(std::filesystem::exists(dir + "/killed.safetensors"));
  killed.push_back("--resume");
  const RunResult resumed = RunStrata(killed, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming after step"), std::string::npos) << resumed.err;
  // The log holds the killed run's steps, then the resumed run's: step by step, the last line
  // of each step is the uninterrupted run's.
  const std::map<long, std::string> a = StepLosses(dir + "/whole.jsonl");
  const std::map<long, std::string> b = StepLosses(dir + "/killed.jsonl");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(ReadWholeFile(dir + "/whole.safetensors") ==
              ReadWholeFile(dir + "/killed.safetensors"))
      << "the exported weights differ";
}

class TrainLlamaInit : public ::testing::Test {
 protected:
  // A Hugging Face directory from Strata's own export of llama-tiny's initial weights, with
  // config.json edited by `edit`.
  std::string HfDirectory(const std::string& name,
                          const std::function<void(nlohmann::json&)>& edit = {}) {
    const std::string weights = dir_ + "/" + name + ".safetensors";
    const RunResult r = RunStrata({"train", "--model", "llama-tiny", "--steps", "0", "--export",
                                   weights}, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string hf = dir_ + "/" + name;
    std::filesystem::create_directories(hf);
    std::filesystem::rename(weights, hf + "/model.safetensors");
    nlohmann::json config = {{"model_type", "llama"},           {"hidden_size", 64},
                             {"intermediate_size", 128},        {"num_attention_heads", 4},
                             {"num_key_value_heads", 2},        {"num_hidden_layers", 2},
                             {"rms_norm_eps", 1e-5},            {"rope_theta", 10000.0},
                             {"vocab_size", 256},               {"max_position_embeddings", 64},
                             {"tie_word_embeddings", false},    {"hidden_act", "silu"}};
    if (edit) edit(config);
    std::ofstream(hf + "/config.json") << config.dump(2);
    return hf;
  }

  RunResult Init(const std::string& hf, const std::string& out) {
    return RunStrata({"train", "--init", hf, "--steps", "0", "--export", out}, dir_);
  }

  ScratchDir scratch_{"train_llama_init"};
  const std::string dir_ = scratch_.path();
};

TEST_F(TrainLlamaInit, AHuggingFaceDirectoryExportsBackBitForBit) {
  const std::string hf = HfDirectory("hf");
  const RunResult r = Init(hf, dir_ + "/back.safetensors");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("loaded 21 tensors"), std::string::npos) << r.err;
  EXPECT_TRUE(ReadWholeFile(hf + "/model.safetensors") ==
              ReadWholeFile(dir_ + "/back.safetensors"));
}

TEST_F(TrainLlamaInit, AConfigKeyStrataDoesNotComputeIsNamed) {
  const std::string hf =
      HfDirectory("scaled", [](nlohmann::json& c) { c["rope_scaling"] = {{"factor", 8.0}}; });
  const RunResult r = Init(hf, dir_ + "/out.safetensors");
  ExpectOneClearLine(r, {"rope_scaling"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out.safetensors"));
}

TEST_F(TrainLlamaInit, AConfigThatDisagreesWithTheTensorsNamesTheTensorAndBothShapes) {
  const std::string hf =
      HfDirectory("wide", [](nlohmann::json& c) { c["intermediate_size"] = 96; });
  const RunResult r = Init(hf, dir_ + "/out.safetensors");
  ExpectOneClearLine(r, {"model.layers.0.mlp.gate_proj.weight", "(128, 64)", "(96, 64)"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out.safetensors"));
}

TEST_F(TrainLlamaInit, AMissingTensorIsNamed) {
  // Untied in config.json, so lm_head.weight is needed, and a tied export has none.
  const std::string weights = dir_ + "/tied.safetensors";
  ASSERT_EQ(RunStrata({"train", "--model", "llama-tiny", "--tie-embeddings", "--steps", "0",
                       "--export", weights}, dir_).exit_code, 0);
  const std::string hf = HfDirectory("missing");
  std::filesystem::rename(weights, hf + "/model.safetensors");
  const RunResult r = Init(hf, dir_ + "/out.safetensors");
  ExpectOneClearLine(r, {"lm_head.weight", "missing"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out.safetensors"));
}

TEST_F(TrainLlamaInit, AShardTheIndexListsButIsAbsentIsNamed) {
  const std::string hf = HfDirectory("sharded");
  std::filesystem::rename(hf + "/model.safetensors", hf + "/model-00001-of-00002.safetensors");
  nlohmann::json index = {{"weight_map",
                           {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
                            {"lm_head.weight", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(hf + "/model.safetensors.index.json") << index.dump();
  const RunResult r = Init(hf, dir_ + "/out.safetensors");
  ExpectOneClearLine(r, {"model-00002-of-00002.safetensors"});
  EXPECT_EQ(r.exit_code, 1);
}

// --export-dir writes a Hugging Face directory that --init reads back, shape and weights, for
// either family (GPT-2's config.json says model_type gpt2).
class TrainExportDir : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainExportDir, WritesADirectoryInitReadsBackBitForBit) {
  ScratchDir scratch("train_export_dir");
  const std::string& dir = scratch.path();
  const std::string out = dir + "/out";
  const RunResult r = RunStrata({"train", "--model", GetParam(), "--steps", "2", "--batch", "2",
                                 "--seq", "32", "--export-dir", out}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json config = nlohmann::json::parse(ReadWholeFile(out + "/config.json"));
  EXPECT_EQ(config.at("model_type"), GetParam() == "tiny" ? "gpt2" : "llama") << config.dump();
  const RunResult back = RunStrata({"train", "--init", out, "--steps", "0", "--export",
                                    dir + "/back.safetensors"}, dir);
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_TRUE(ReadWholeFile(out + "/model.safetensors") ==
              ReadWholeFile(dir + "/back.safetensors"));
  // The paged engine reads it block by block into its pages and writes it back the same way.
  const RunResult paged = RunStrata({"train", "--init", out, "--steps", "0", "--engine", "paged",
                                     "--page-size", "8K", "--export", dir + "/paged.safetensors"},
                                    dir);
  ASSERT_EQ(paged.exit_code, 0) << paged.err;
  EXPECT_NE(paged.err.find("--init: loaded"), std::string::npos) << paged.err;
  EXPECT_TRUE(ReadWholeFile(out + "/model.safetensors") ==
              ReadWholeFile(dir + "/paged.safetensors"));
  const RunResult both = RunStrata({"train", "--model", GetParam(), "--steps", "1", "--export",
                                    dir + "/x.safetensors", "--export-dir", dir + "/y"}, dir);
  ExpectOneClearLine(both, {"--export", "--export-dir"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir + "/y"));
}

INSTANTIATE_TEST_SUITE_P(Families, TrainExportDir, ::testing::Values("tiny", "llama-tiny"));

// Ranks agree on an --init directory: its files are what they compare (the run's fingerprint).
TEST_F(TrainLlamaInit, DataParallelRanksAgreeOnAHuggingFaceDirectory) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  const std::string hf = HfDirectory("hf_dp");
  const RunResult r = RunMpi({{"train", "--init", hf, "--dp", "2", "--shard", "none", "--steps",
                               "1", "--batch", "4", "--seq", "32"}}, 2, dir_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Shapes and flags: usage errors, exit 2, naming the flag.
TEST(TrainLlamaBadInput, ShapesAndFlagsThatCannotWorkNameTheFlag) {
  ScratchDir scratch("train_llama_bad");
  const std::string& dir = scratch.path();
  const std::string out = dir + "/out.safetensors";
  struct Case {
    std::vector<std::string> flags;
    std::vector<std::string> fragments;
    int exit_code;
  } cases[] = {
      {{"--model", "llama-tiny", "--n-kv-head", "3"}, {"--n-kv-head"}, 2},
      {{"--model", "llama-tiny", "--n-embd", "12", "--n-head", "4", "--n-kv-head", "2"},
       {"head"},
       2},
      {{"--model", "tiny", "--n-kv-head", "2"}, {"--n-kv-head", "LLaMA flag", "--arch llama"}, 2},
      {{"--arch", "mamba"}, {"--arch", "mamba"}, 2},
      {{"--arch", "llama", "--model", "gpt2"}, {"--model gpt2", "--arch"}, 2},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"train", "--steps", "1", "--batch", "2", "--export", out};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const RunResult r = RunStrata(args, dir);
    SCOPED_TRACE(::testing::PrintToString(c.flags));
    ExpectOneClearLine(r, c.fragments);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

// --tp cuts whole kv heads: a T that does not divide n_kv_head is refused on every rank, naming
// the flag and the tensor, before anything is written.
TEST(TrainLlamaBadInput, ATpThatDoesNotDivideTheKvHeadsIsRefusedNamingTheFlag) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_llama_tp");
  const std::string& dir = scratch.path();
  std::vector<std::string> args = LlamaArgs(dir, "tp");
  args.insert(args.end(), {"--n-kv-head", "1", "--tp", "2"});
  const RunResult r = RunMpi({args}, 2, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--tp 2 does not divide the 1 attention heads of "
                       "model.layers.0.self_attn.k_proj.weight"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/tp.safetensors"));
}

}  // namespace
}  // namespace strata::testing
