// `strata bench parallel`, measurement 2: `strata train` as kRanks data-parallel ranks of one
// thread each vs one rank of kRanks threads, the same model and global batch, in rounds
// (bench/bench_parallel.h; Note [Data-parallel scaling] in bench/bench_parallel.cc).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_offload.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {
namespace {

// The median tokens/s of the steps after `warmup` in a --log-json file (each line one step).
Result<double> MedianTokensPerS(const std::string& path, int warmup) {
  std::ifstream in(path);
  std::vector<double> tokens_per_s;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step") || !j.contains("tokens_per_s")) continue;
    if (j["step"].get<long>() > warmup) tokens_per_s.push_back(j["tokens_per_s"].get<double>());
  }
  if (tokens_per_s.empty()) {
    return Status::Internal("bench parallel: " + path + " holds no step after the " +
                            std::to_string(warmup) + " warmup steps; the run wrote no --log-json");
  }
  return Median(tokens_per_s);
}

struct TrainRun {
  std::vector<std::string> argv;
  std::string log_json, tag, display;
};

Result<double> RunTrain(const Flags& f, const TrainRun& run, const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove(run.log_json, ec);  // each round's steps alone
  STRATA_ASSIGN_OR_RETURN(const ChildResult child,
                          RunChild(run.argv, dir, run.tag, f.timeout_s + 30));
  if (child.exit_code != 0) return ChildFailed(run.display, child, f.timeout_s);
  return MedianTokensPerS(run.log_json, f.warmup_steps);
}

}  // namespace

std::vector<std::string> TrainRunArgs(const Flags& f, const std::string& self,
                                      const std::string& log_json) {
  return {self,          "train",
          "--model",     f.model,
          "--batch",     std::to_string(f.batch),
          "--seq",       std::to_string(f.seq),
          "--steps",     std::to_string(f.warmup_steps + f.steps),
          "--log-json",  log_json,
          "--log-level", "warn"};
}

std::vector<double> DpResult::ratios() const {
  std::vector<double> v;
  for (const DpRound& r : rounds) v.push_back(r.ratio());
  return v;
}

const DpRound& DpResult::median() const { return rounds[offload::MedianIndex(ratios())]; }

Result<DpResult> MeasureDpScaling(const Flags& f, const std::string& self,
                                  const std::string& mpirun, const std::string& dir) {
  TrainRun dp2{MpirunPrefix(mpirun, f.timeout_s, kRanks), dir + "/dp2.jsonl", "dp2", ""};
  for (const std::string& a : TrainRunArgs(f, self, dp2.log_json)) dp2.argv.push_back(a);
  dp2.argv.insert(dp2.argv.end(), {"--dp", std::to_string(kRanks), "--threads", "1"});
  TrainRun dp1{TrainRunArgs(f, self, dir + "/dp1.jsonl"), dir + "/dp1.jsonl", "dp1", ""};
  dp1.argv.insert(dp1.argv.end(), {"--threads", std::to_string(kRanks), "--engine", "memory"});
  DpResult r;
  r.dp2_command = dp2.display = DisplayCommand(dp2.argv, self, mpirun, dir);
  r.dp1_command = dp1.display = DisplayCommand(dp1.argv, self, mpirun, dir);
  std::fprintf(stderr, "bench parallel: dp: %s\nbench parallel: vs %s\n", r.dp2_command.c_str(),
               r.dp1_command.c_str());
  for (int i = 0; i < f.rounds; ++i) {
    // Alternate which goes first, so that a drift in the machine's speed favours neither.
    DpRound round;
    const bool dp2_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool two = (k == 0) == dp2_first;
      STRATA_ASSIGN_OR_RETURN(const double tps, RunTrain(f, two ? dp2 : dp1, dir));
      (two ? round.dp2_tokens_per_s : round.dp1_tokens_per_s) = tps;
    }
    std::fprintf(stderr,
                 "bench parallel: dp round %d/%d: %d ranks x 1 thread %.0f tokens/s, 1 rank x %d "
                 "threads %.0f tokens/s, ratio %.3f\n",
                 i + 1, f.rounds, kRanks, round.dp2_tokens_per_s, kRanks, round.dp1_tokens_per_s,
                 round.ratio());
    r.rounds.push_back(round);
  }
  return r;
}

}  // namespace strata::bench::parallel_bench
