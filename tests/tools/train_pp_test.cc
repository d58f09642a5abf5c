// `strata train --pp P` under mpirun (docs/parallel.md, Note [Stage programs] in
// scheduler/step_program.h): a pipeline gives the bits of one rank with the same --micro-batch,
// whatever the schedule, the partition or the data-parallel ranks beside it; 1F1B holds at most P
// micro-batches of activations on stage 0 while GPipe holds all of them. Every mpirun has its own
// --timeout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

// The tiny model (clipped at 2.0, so that the norm gathered over the stages decides updates).
std::vector<std::string> TrainArgs(const std::string& dir, const std::string& tag) {
  return {"train",    "--model",  "tiny", "--batch", "8",         "--seq",       "32",
          "--steps",  "6",        "--lr", "1e-3",    "--grad-clip", "2.0",        "--threads",
          "1",        "--engine", "paged", "--log-json", dir + "/" + tag + ".jsonl", "--export",
          dir + "/" + tag + ".safetensors"};
}

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Every step's loss and norm as the JSON texts (exact bits), and the exported weights.
std::vector<std::string> Steps(const std::string& dir, const std::string& tag) {
  std::vector<std::string> out;
  std::istringstream lines(ReadWholeFile(dir + "/" + tag + ".jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    out.push_back(j.at("loss").dump() + " " + j.at("grad_norm").dump());
  }
  return out;
}

struct Case {
  int ranks;
  std::vector<std::string> flags;        // of the pipeline, beside TrainArgs
  std::vector<std::string> one_flags;    // of the one-rank run it gives the bits of
  std::string says;                      // in its first line
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.says; }

class TrainPp : public ::testing::TestWithParam<Case> {};

TEST_P(TrainPp, GivesOneRanksBits) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  const Case& c = GetParam();
  ScratchDir scratch("train_pp");
  const std::string& dir = scratch.path();
  RunResult r1 = RunStrata(With(TrainArgs(dir, "one"), c.one_flags), dir);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  RunResult rp = RunMpi({With(TrainArgs(dir, "pp"), c.flags)}, c.ranks, dir);
  ASSERT_EQ(rp.exit_code, 0) << rp.err;
  const std::string first = rp.err.substr(0, rp.err.find('\n'));
  EXPECT_NE(first.find(c.says), std::string::npos) << first;
  const std::vector<std::string> one = Steps(dir, "one"), pp = Steps(dir, "pp");
  ASSERT_EQ(one.size(), 6u);
  EXPECT_EQ(pp, one);
  const std::string weights = ReadWholeFile(dir + "/one.safetensors");
  EXPECT_FALSE(weights.empty());
  EXPECT_TRUE(ReadWholeFile(dir + "/pp.safetensors") == weights) << "the exported weights differ";
}

INSTANTIATE_TEST_SUITE_P(
    Grids, TrainPp,
    ::testing::Values(
        Case{2,
             {"--pp", "2", "--schedule", "gpipe", "--micro-batch", "2"},
             {"--micro-batch", "2"},
             "grid: dp 1 x tp 1 x pp 2 over mpi | stages (--pp-partition uniform): 0: blocks 1-1 "
             "+ embedding"},
        Case{2,
             {"--pp", "2", "--schedule", "1f1b", "--micro-batch", "2"},
             {"--micro-batch", "2"},
             "--schedule 1f1b, 4 micro-batches"},
        // Five blocks cut 2,1,1,1: the first stage holds two blocks and the embedding.
        Case{4,
             {"--pp", "4", "--pp-partition", "2,1,1,1", "--n-layer", "5", "--micro-batch", "1"},
             {"--n-layer", "5", "--micro-batch", "1"},
             "0: blocks 1-2 + embedding"},
        // Each data-parallel rank a pipeline of its own micro-batch, every block sharded.
        Case{4,
             {"--pp", "2", "--dp", "2", "--shard", "all"},
             {"--micro-batch", "4"},
             "grid: dp 2 x tp 1 x pp 2 over mpi"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return "case" + std::to_string(info.index);
    });

// Stage-aware recompute (Merak): under one --gpu-mem, stage 0 of a 1F1B pipeline holds 2
// micro-batches in flight and stage 1 one, so --recompute auto checkpoints a block on stage 0 and
// none on stage 1 (each rank's line names its decision); recompute keeps one rank's bits.
TEST(TrainPpRecompute, EachStageDecidesForItsOwnMicroBatchesInFlight) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_pp_recompute");
  const std::string& dir = scratch.path();
  const std::vector<std::string> model = {"--n-layer", "4", "--micro-batch", "1"};
  RunResult r1 = RunStrata(With(TrainArgs(dir, "one"), model), dir);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  RunResult rp = RunMpi(
      {With(TrainArgs(dir, "pp"), With(model, {"--pp", "2", "--recompute", "auto", "--gpu-mem",
                                               "600K"}))},
      2, dir);
  ASSERT_EQ(rp.exit_code, 0) << rp.err;
  const std::string first = rp.err.substr(0, rp.err.find('\n'));
  EXPECT_NE(first.find("recompute 1 of 2 blocks; rank 1:"), std::string::npos) << first;
  EXPECT_NE(first.find("recompute 0 of 2 blocks | micro-batch order"), std::string::npos) << first;
  EXPECT_EQ(Steps(dir, "pp"), Steps(dir, "one"));
}

// Rank 0's (stage 0's) device peak and activation bytes for a schedule and a micro-batch count.
struct Peaks {
  double device = 0, activations = 0;
};

Peaks StageZeroPeaks(const std::string& dir, const std::string& schedule, int micro) {
  const std::string tag = schedule + std::to_string(micro);
  std::vector<std::string> args = TrainArgs(dir, tag);
  args[4] = std::to_string(micro);  // --batch: `micro` micro-batches of one row
  args[8] = "2";                     // --steps
  args.insert(args.end(), {"--pp", "2", "--schedule", schedule, "--micro-batch", "1"});
  RunResult r = RunMpi({args}, 2, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(ReadWholeFile(dir + "/" + tag + ".jsonl"));
  std::string line;
  std::getline(lines, line);
  const auto peak = nlohmann::json::parse(line).at("peak_bytes");
  return {double(peak.at("device").get<uint64_t>()), double(peak.at("activations").get<uint64_t>())};
}

// Note [Stage activations]: stage 0 of 2 holds 2 micro-batches' activations under 1F1B and all M
// under GPipe, so GPipe's peak exceeds 1F1B's by M - 2 activation sets (the slots, the tokens and
// the per-micro-batch residual gradients are the same for both). From M = 4 and M = 8: the set is
// the same size both times (to the plan's 4 KiB rounding), and not empty.
TEST(TrainPpMemory, OneFOneBHoldsPMicroBatchesOnStageZeroAndGPipeAllOfThem) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_pp_memory");
  const std::string& dir = scratch.path();
  const Peaks f4 = StageZeroPeaks(dir, "1f1b", 4), g4 = StageZeroPeaks(dir, "gpipe", 4);
  const Peaks f8 = StageZeroPeaks(dir, "1f1b", 8), g8 = StageZeroPeaks(dir, "gpipe", 8);
  const double set = (g4.activations - f4.activations) / 2;  // 4 - 2 sets
  EXPECT_GT(set, 64 * 1024) << "GPipe should hold more than 1F1B";
  EXPECT_NEAR(g8.activations - f8.activations, 6 * set, 2 * 4096.0)
      << "GPipe holds M sets, 1F1B 2, at M = 8";
  // 1F1B's grows by the 4 residual gradients only (4 x 1 x 32 x 32 floats = 16 KiB), not by sets.
  EXPECT_LT(f8.activations - f4.activations, set)
      << "1F1B's activations should not grow with the micro-batches";
  // The device peaks, which hold the activations beside the same slots, differ the same way.
  EXPECT_NEAR(g8.device - f8.device, g8.activations - f8.activations, 2 * 4096.0);
}

}  // namespace
}  // namespace strata::testing
