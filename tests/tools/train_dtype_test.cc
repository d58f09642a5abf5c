// `strata train --dtype fp32|bf16` (Note [bf16 compute] in core/kernels/dtype.h): bf16 tracks the
// fp32 losses within a stated tolerance without equalling them, keeps the offload invariant (a
// paged run with parameters and moments on NVMe gives the in-memory run's bits), and an unknown
// dtype is a usage error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

// bf16 rounds every GEMM operand to 8 significant bits (relative error up to 2^-9); over the six
// steps of this tiny run the losses stay within 1e-3 relative of fp32's (measured 2026-11-26:
// at most 1.8e-5, at step 6; the test prints each step).
constexpr double kBf16LossTolerance = 1e-3;

class TrainDtype : public ::testing::Test {
 protected:
  // The --log-json losses of a tiny run, as printed (exact text) and as numbers.
  std::vector<std::string> Losses(const std::string& tag, std::vector<std::string> extra,
                                  std::vector<double>* values = nullptr) {
    const std::string log = dir_ + "/" + tag + ".jsonl";
    std::vector<std::string> args = {"train",   "--model", "tiny",    "--batch", "4",
                                     "--seq",   "64",      "--steps", "6",       "--lr",
                                     "1e-3",    "--threads", "2",     "--log-json", log};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = RunStrata(args, dir_);
    EXPECT_EQ(r.exit_code, 0) << tag << ": " << r.err;
    std::vector<std::string> texts;
    std::istringstream lines(ReadWholeFile(log));
    std::string line;
    while (std::getline(lines, line)) {
      const auto pos = line.find("\"loss\":");
      texts.push_back(line.substr(pos, line.find(',', pos) - pos));
      if (values) values->push_back(nlohmann::json::parse(line).at("loss").get<double>());
    }
    return texts;
  }

  ScratchDir scratch_{"dtype"};
  const std::string dir_ = scratch_.path();
};

TEST_F(TrainDtype, Bf16TracksFp32WithinTheToleranceAndDiffers) {
  std::vector<double> fp32, bf16;
  const auto fp32_texts = Losses("fp32", {"--dtype", "fp32"}, &fp32);
  const auto bf16_texts = Losses("bf16", {"--dtype", "bf16"}, &bf16);
  ASSERT_EQ(fp32.size(), 6u);
  ASSERT_EQ(bf16.size(), 6u);
  EXPECT_NE(fp32_texts, bf16_texts) << "bf16 gave the fp32 losses: nothing was rounded";
  for (size_t i = 0; i < fp32.size(); ++i) {
    const double relative = std::abs(bf16[i] - fp32[i]) / std::abs(fp32[i]);
    std::printf("step %zu: fp32 %.7f bf16 %.7f relative %.2e\n", i + 1, fp32[i], bf16[i],
                relative);
    EXPECT_LT(relative, kBf16LossTolerance) << "step " << i + 1;
  }
  // The default is fp32.
  EXPECT_EQ(Losses("default", {}), fp32_texts);
}

TEST_F(TrainDtype, Bf16GivesTheSameBitsWhateverTheBudgets) {
  std::filesystem::create_directories(dir_ + "/nvme");
  const auto in_memory = Losses("memory", {"--dtype", "bf16", "--engine", "memory"});
  const auto paged =
      Losses("paged", {"--dtype", "bf16", "--engine", "paged", "--page-size", "16K",
                       "--host-mem", "160K", "--params-on", "nvme", "--optimizer-on", "nvme",
                       "--nvme-dir", dir_ + "/nvme"});
  ASSERT_EQ(in_memory.size(), 6u);
  EXPECT_EQ(in_memory, paged);
}

TEST_F(TrainDtype, UnknownDtypeIsAUsageError) {
  auto r = RunStrata({"train", "--model", "tiny", "--steps", "1", "--dtype", "fp16"}, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--dtype"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::testing
