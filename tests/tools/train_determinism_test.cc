// Determinism of `strata train`: one seed gives identical --log-json losses and identical
// exported bytes, run to run and for 1 vs 2 threads; and the loss falls on the builtin corpus.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

struct TrainRun {
  std::vector<std::string> loss_texts;  // the JSON text of each loss, to compare exact bits
  std::vector<double> losses;
  std::string weights;
};

TrainRun TrainTiny(const std::string& dir, const std::string& tag, int threads, int steps) {
  const std::string log = dir + "/" + tag + ".jsonl", out = dir + "/" + tag + ".safetensors";
  auto r = RunStrata({"train", "--model", "tiny", "--batch", "4", "--seq", "64", "--steps",
                      std::to_string(steps), "--lr", "1e-3", "--seed", "7", "--threads",
                      std::to_string(threads), "--log-json", log, "--export", out},
                     dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  TrainRun run;
  std::istringstream lines(ReadWholeFile(log));
  std::string line;
  long expected_step = 1;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("step").get<long>(), expected_step++);
    run.losses.push_back(j.at("loss").get<double>());
    const auto pos = line.find("\"loss\":");
    run.loss_texts.push_back(line.substr(pos, line.find(',', pos) - pos));
    EXPECT_TRUE(j.contains("tokens_per_s"));
    EXPECT_TRUE(j.contains("elapsed_s"));
  }
  EXPECT_EQ(run.losses.size(), size_t(steps));
  run.weights = ReadWholeFile(out);
  return run;
}

TEST(TrainDeterminism, SameSeedSameLossesAndBytes) {
  ScratchDir scratch("determinism");
  const std::string& dir = scratch.path();
  TrainRun a = TrainTiny(dir, "a", 2, 6);
  TrainRun b = TrainTiny(dir, "b", 2, 6);
  TrainRun one_thread = TrainTiny(dir, "c", 1, 6);
  EXPECT_EQ(a.loss_texts, b.loss_texts);
  EXPECT_EQ(a.loss_texts, one_thread.loss_texts);
  ASSERT_FALSE(a.weights.empty());
  EXPECT_TRUE(a.weights == b.weights) << "exported bytes differ between identical runs";
  EXPECT_TRUE(a.weights == one_thread.weights) << "exported bytes differ for 1 vs 2 threads";
}

TEST(TrainDeterminism, LossFallsOnBuiltinCorpus) {
  ScratchDir scratch("lossfalls");
  const std::string& dir = scratch.path();
  TrainRun r = TrainTiny(dir, "fall", 2, 30);
  ASSERT_EQ(r.losses.size(), 30u);
  EXPECT_NEAR(r.losses.front(), std::log(256.0), 0.3);  // about uniform at init
  EXPECT_LT(r.losses.back(), r.losses.front() - 1.0);
}

TEST(TrainDeterminism, ZeroStepsExportsInitialWeights) {
  ScratchDir scratch("zerosteps");
  const std::string& dir = scratch.path();
  TrainRun r0 = TrainTiny(dir, "zero", 1, 0);
  EXPECT_FALSE(r0.weights.empty());
  // Starting from the exported initial weights gives the same run as starting from the seed.
  const std::string log = dir + "/from_init.jsonl";
  auto r = RunStrata({"train", "--init", dir + "/zero.safetensors", "--batch", "4", "--seq",
                      "64", "--steps", "3", "--lr", "1e-3", "--threads", "1", "--log-json", log},
                     dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TrainRun seeded = TrainTiny(dir, "seeded", 1, 3);
  std::istringstream lines(ReadWholeFile(log));
  std::string line;
  std::vector<double> losses;
  while (std::getline(lines, line)) losses.push_back(nlohmann::json::parse(line).at("loss"));
  EXPECT_EQ(losses, seeded.losses);
}

}  // namespace
}  // namespace strata::testing
