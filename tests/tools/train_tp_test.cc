// `strata train --tp T` under mpirun (docs/parallel.md, Note [Tensor-parallel slices] in
// core/nn/tp_layout.h), for GPT-2 and LLaMA (untied and tied): each rank pages its slice of the
// model; the run matches one rank's up to float rounding (the row-parallel partial sums change the
// order of the additions) and repeats its own bits run to run. Every mpirun has its own --timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/safetensors.h"
#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

constexpr int kSteps = 10;

// A tiny model (GPT-2's: 2 heads; LLaMA's: 4 heads over 2 kv heads; vocabulary 256) for 10 steps,
// clipped at 2.0 so that the norm, summed over the tp group, decides some updates.
std::vector<std::string> TrainArgs(const std::string& dir, const std::string& tag,
                                   const std::vector<std::string>& model) {
  std::vector<std::string> args = {"train"};
  args.insert(args.end(), model.begin(), model.end());
  const std::vector<std::string> rest = {"--batch",     "8",
                                         "--seq",       "32",
                                         "--steps",     std::to_string(kSteps),
                                         "--lr",        "1e-3",
                                         "--grad-clip", "2.0",
                                         "--threads",   "1",
                                         "--engine",    "paged",
                                         "--log-json",  dir + "/" + tag + ".jsonl",
                                         "--export",    dir + "/" + tag + ".safetensors"};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

struct Outcome {
  std::vector<double> losses, norms;
  std::vector<std::string> loss_bits;  // the JSON texts: exact bits
  std::vector<float> weights;
  std::string weight_bits;
};

Outcome Read(const std::string& dir, const std::string& tag) {
  Outcome o;
  std::istringstream lines(ReadWholeFile(dir + "/" + tag + ".jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    o.losses.push_back(j.at("loss").get<double>());
    o.norms.push_back(j.at("grad_norm").get<double>());
    o.loss_bits.push_back(j.at("loss").dump() + " " + j.at("grad_norm").dump());
  }
  // Every tensor, in the file's name order: the comparison needs no model.
  const std::string path = dir + "/" + tag + ".safetensors";
  o.weight_bits = ReadWholeFile(path);
  Result<SafetensorsFile> file = ReadSafetensors(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return o;
  for (const auto& [name, t] : file->tensors) {
    o.weights.insert(o.weights.end(), t.data.begin(), t.data.end());
  }
  return o;
}

double RelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(err / norm);
}

// Losses within 1e-5 relative at every step, the norms within 1e-4, the weights within 1e-4.
void ExpectMatchesWithinRounding(const Outcome& tp, const Outcome& one) {
  ASSERT_EQ(one.losses.size(), size_t(kSteps));
  ASSERT_EQ(tp.losses.size(), size_t(kSteps));
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_LT(std::abs(tp.losses[s] - one.losses[s]) / one.losses[s], 1e-5) << "step " << s + 1;
    EXPECT_LT(std::abs(tp.norms[s] - one.norms[s]) / one.norms[s], 1e-4) << "step " << s + 1;
  }
  ASSERT_EQ(tp.weights.size(), one.weights.size());
  EXPECT_LT(RelativeError(tp.weights, one.weights), 1e-4);
}

// (ranks, extra flags): tp2; dp2 x tp2 (one micro-batch per data-parallel rank: one rank's run with
// --micro-batch 4); tp2 paging its slice to NVMe under tight budgets; tp2 x pp2; the 2 x 2 x 2 grid
// on NVMe. A pipeline keeps one rank's bits, so the tp rule holds for them too.
struct Case {
  int ranks;
  std::vector<std::string> flags;
  std::string micro_batch;  // of the one-rank run it is compared with
  std::string grid;
  std::vector<std::string> model = {"--model", "tiny"};
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model[1] << (c.model.size() > 2 ? " " + c.model[2] : "") << ", " << c.grid << " on "
      << c.ranks << " ranks";
}

class TrainTp : public ::testing::TestWithParam<Case> {};

TEST_P(TrainTp, MatchesOneRankWithinRoundingAndRepeatsItsBits) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  const Case& c = GetParam();
  ScratchDir scratch("train_tp");
  const std::string& dir = scratch.path();
  RunResult r1 =
      RunStrata(With(TrainArgs(dir, "one", c.model), {"--micro-batch", c.micro_batch}), dir);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  // Each run its own --nvme-dir (a store is continued only with --resume).
  auto flags = [&](const std::string& tag) {
    std::vector<std::string> f = c.flags;
    for (std::string& a : f) {
      if (a == "NVME") a = dir + "/nvme-" + tag;
    }
    return f;
  };
  const std::vector<std::string> tp_args = With(TrainArgs(dir, "tp", c.model), flags("tp"));
  RunResult rt = RunMpi({tp_args}, c.ranks, dir);
  ASSERT_EQ(rt.exit_code, 0) << rt.err;
  const std::string first = rt.err.substr(0, rt.err.find('\n'));
  EXPECT_NE(first.find("grid: " + c.grid + " over mpi"), std::string::npos) << first;
  if (std::find(c.flags.begin(), c.flags.end(), "NVME") != c.flags.end()) {  // pages went there
    const size_t mean = rt.err.find("moved per step (mean)");
    ASSERT_NE(mean, std::string::npos) << rt.err;
    EXPECT_EQ(rt.err.find("nvme read 0 B", mean), std::string::npos) << rt.err.substr(mean);
  }
  const Outcome one = Read(dir, "one"), tp = Read(dir, "tp");
  ExpectMatchesWithinRounding(tp, one);
  std::vector<std::string> again_args = With(TrainArgs(dir, "again", c.model), flags("again"));
  RunResult ra = RunMpi({again_args}, c.ranks, dir);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  const Outcome again = Read(dir, "again");
  EXPECT_EQ(again.loss_bits, tp.loss_bits) << "a second run gives other bits";
  EXPECT_TRUE(again.weight_bits == tp.weight_bits) << "a second run exports other weights";
}

INSTANTIATE_TEST_SUITE_P(
    Grids, TrainTp,
    ::testing::Values(
        Case{2, {"--tp", "2"}, "8", "dp 1 x tp 2 x pp 1"},
        Case{4, {"--tp", "2", "--dp", "2"}, "4", "dp 2 x tp 2 x pp 1"},
        Case{2,
             {"--tp", "2", "--host-mem", "256K", "--page-size", "16K", "--params-on", "nvme",
              "--optimizer-on", "nvme", "--nvme-dir", "NVME"},
             "8",
             "dp 1 x tp 2 x pp 1"},
        Case{4, {"--tp", "2", "--pp", "2", "--micro-batch", "2"}, "2", "dp 1 x tp 2 x pp 2"},
        // The 3D grid, each rank paging its part to NVMe under tight budgets.
        Case{8,
             {"--tp", "2", "--pp", "2", "--dp", "2", "--micro-batch", "2", "--host-mem", "256K",
              "--page-size", "16K", "--params-on", "nvme", "--optimizer-on", "nvme", "--nvme-dir",
              "NVME"},
             "2",
             "dp 2 x tp 2 x pp 2"},
        // LLaMA: kv heads split over tp, the vocab-parallel embedding and an untied
        // head, then a tied one; its 3D grid on NVMe.
        Case{2, {"--tp", "2"}, "8", "dp 1 x tp 2 x pp 1", {"--model", "llama-tiny"}},
        Case{2,
             {"--tp", "2"},
             "8",
             "dp 1 x tp 2 x pp 1",
             {"--model", "llama-tiny", "--tie-embeddings"}},
        Case{8,
             {"--tp", "2", "--pp", "2", "--dp", "2", "--micro-batch", "2", "--host-mem", "256K",
              "--page-size", "16K", "--params-on", "nvme", "--optimizer-on", "nvme", "--nvme-dir",
              "NVME"},
             "2",
             "dp 2 x tp 2 x pp 2",
             {"--model", "llama-tiny"}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return "ranks" + std::to_string(info.param.ranks) + "_" + std::to_string(info.index);
    });

}  // namespace
}  // namespace strata::testing
