// `strata bench parallel`, measurements 3 and 4 (bench/bench_parallel.h; Notes [Shard cost] and
// [Comm overlap] in bench/bench_parallel.cc):
// 3. shard_cost: `strata train --dp 2 --shard all` vs `--shard none`, both on the paged engine
//    with the same budgets, tokens/s, in rounds alternating which goes first;
// 4. comm_overlap: the sharded run's step vs max(its --movement-only run's step, the compute
//    queue's busy time of two single-rank runs of the per-rank batch at once), in rounds.
// DpArgs and MedianStepS serve 5 (bench/bench_parallel_osdp.cc) too, ComputeOnlyPair 7
// (bench/bench_parallel_pp.cc).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "scheduler/trace.h"
#include "bench/bench_offload.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {
namespace {

// `strata train` of `batch` rows on one rank's paged engine with 3 and 4's budgets, one thread.
std::vector<std::string> PagedTrainArgs(const Flags& f, const std::string& self, int batch) {
  return {self,          "train",
          "--model",     f.model,
          "--batch",     std::to_string(batch),
          "--seq",       std::to_string(f.seq),
          "--steps",     std::to_string(f.warmup_steps + f.steps),
          "--threads",   "1",
          "--engine",    "paged",
          "--gpu-mem",   f.gpu_mem,
          "--host-mem",  f.host_mem,
          "--log-level", "warn"};
}

// The per-step field `field` of the steps after `warmup` in a --log-json file (one step a line).
Result<std::vector<double>> StepField(const std::string& path, int warmup, const char* field) {
  std::ifstream in(path);
  std::vector<double> v;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step") || !j.contains(field)) continue;
    if (j["step"].get<long>() > warmup) v.push_back(j[field].get<double>());
  }
  if (v.empty()) {
    return Status::Internal("bench parallel: " + path + " holds no step after the " +
                            std::to_string(warmup) + " warmup steps; the run wrote no --log-json");
  }
  return v;
}

// Runs `run` (its old log removed first, so that only this run's steps count) and returns the
// tokens/s of its steps after the warmup (tokens_per_s counts the global batch).
Result<std::vector<double>> RunTokensPerS(const Flags& f, const Launch& run,
                                          const std::string& dir) {
  STRATA_RETURN_IF_ERROR(RunFresh(f, run, dir));
  return StepField(run.out_file, f.warmup_steps, "tokens_per_s");
}

Result<double> MedianTokensPerS(const Flags& f, const Launch& run, const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(const std::vector<double> tps, RunTokensPerS(f, run, dir));
  return Median(tps);
}

}  // namespace

// 4's compute-only pair (kRanks single-rank runs of the per-rank batch), 7's single-rank pair.
Result<std::vector<double>> ComputeOnlyPair(const Flags& f, const std::vector<Launch>& pair,
                                            const std::string& dir) {
  for (const Launch& p : pair) {
    std::error_code ec;
    std::filesystem::remove(p.out_file, ec);
  }
  std::vector<std::optional<Result<ChildResult>>> children(pair.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < pair.size(); ++i) {
      threads.emplace_back([&, i] {
        children[i].emplace(RunChild(pair[i].argv, dir, pair[i].tag, f.timeout_s + 30));
      });
    }
    for (std::thread& t : threads) t.join();
  }
  std::vector<double> busy;
  for (size_t i = 0; i < pair.size(); ++i) {
    if (!children[i]->ok()) return children[i]->status();
    const ChildResult& child = children[i]->value();
    if (child.exit_code != 0) {
      return ChildFailed(pair[i].display + " (one of " + std::to_string(pair.size()) + " at once)",
                         child, f.timeout_s);
    }
    STRATA_ASSIGN_OR_RETURN(const double s, MedianComputeBusyS(pair[i].out_file, f.warmup_steps));
    busy.push_back(s);
  }
  return busy;
}

std::vector<std::string> DpArgs(const Flags& f, const std::string& self, const std::string& mpirun,
                                const std::string& shard, const std::string& log_json) {
  std::vector<std::string> argv = MpirunPrefix(mpirun, f.timeout_s, kRanks);
  for (const std::string& a : PagedTrainArgs(f, self, f.batch)) argv.push_back(a);
  argv.insert(argv.end(),
              {"--dp", std::to_string(kRanks), "--shard", shard, "--log-json", log_json});
  return argv;
}

// tokens_per_s is the step's B x T tokens / its step time, so the step time is B x T /
// tokens_per_s (of each step, then the median).
Result<double> MedianStepS(const Flags& f, const Launch& run, const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(std::vector<double> tps, RunTokensPerS(f, run, dir));
  const double tokens = double(f.batch) * f.seq;
  for (double& x : tps) x = x > 0 ? tokens / x : 0;
  return Median(tps);
}

std::vector<double> ShardResult::ratios() const {
  std::vector<double> v;
  for (const ShardRound& r : rounds) v.push_back(r.ratio());
  return v;
}

const ShardRound& ShardResult::median() const { return rounds[offload::MedianIndex(ratios())]; }

double OverlapRound::factor() const { return step_s / std::max(compute_only_s, comm_only_s); }

std::vector<double> OverlapResult::factors() const {
  std::vector<double> v;
  for (const OverlapRound& r : rounds) v.push_back(r.factor());
  return v;
}

const OverlapRound& OverlapResult::median() const {
  return rounds[offload::MedianIndex(factors())];
}

Result<double> MedianComputeBusyS(const std::string& trace_path, int first_step) {
  std::ifstream in(trace_path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  const std::string queue = scheduler::QueueName(scheduler::Queue::kCompute);
  if (j.is_discarded() || !j.is_object() || !j.contains("traceEvents")) {
    return Status::Internal("bench parallel: " + trace_path +
                            " is not a Chrome trace (strata train --trace)");
  }
  std::optional<int> tid;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name" && e.contains("args") &&
        e["args"].value("name", "") == queue) {
      tid = e.value("tid", -1);
    }
  }
  std::vector<double> busy_us;  // by step
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (!tid || e.value("ph", "") != "X" || e.value("tid", -1) != *tid) continue;
    const long step = e.contains("args") ? e["args"].value("step", -1L) : -1L;
    if (step < first_step) continue;
    if (busy_us.size() <= size_t(step - first_step)) busy_us.resize(step - first_step + 1, 0.0);
    busy_us[step - first_step] += e.value("dur", 0.0);
  }
  std::erase(busy_us, 0.0);  // a step number with no kernel (none is expected)
  if (busy_us.empty()) {
    return Status::Internal("bench parallel: " + trace_path + " holds no '" + queue +
                            "' op of a step numbered >= " + std::to_string(first_step) +
                            " (steps count from 0 there)");
  }
  return Median(busy_us) * 1e-6;
}

Result<ShardResult> MeasureShardCost(const Flags& f, const std::string& self,
                                     const std::string& mpirun, const std::string& dir) {
  Launch all{DpArgs(f, self, mpirun, "all", dir + "/shard-all.jsonl"), dir + "/shard-all.jsonl",
             "shard-all", ""};
  Launch none{DpArgs(f, self, mpirun, "none", dir + "/shard-none.jsonl"), dir + "/shard-none.jsonl",
              "shard-none", ""};
  ShardResult r;
  r.all_command = all.display = DisplayCommand(all.argv, self, mpirun, dir);
  r.none_command = none.display = DisplayCommand(none.argv, self, mpirun, dir);
  std::fprintf(stderr, "bench parallel: shard cost: %s\nbench parallel: vs %s\n",
               r.all_command.c_str(), r.none_command.c_str());
  for (int i = 0; i < f.shard_rounds; ++i) {
    // Alternate which goes first, so that a drift in the machine's speed favours neither.
    ShardRound round;
    round.all_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool is_all = (k == 0) == round.all_first;
      STRATA_ASSIGN_OR_RETURN(const double tps, MedianTokensPerS(f, is_all ? all : none, dir));
      (is_all ? round.all_tokens_per_s : round.none_tokens_per_s) = tps;
    }
    std::fprintf(stderr,
                 "bench parallel: shard round %d/%d (%s first): --shard all %.0f tokens/s, "
                 "--shard none %.0f tokens/s, ratio %.3f\n",
                 i + 1, f.shard_rounds, round.all_first ? "all" : "none", round.all_tokens_per_s,
                 round.none_tokens_per_s, round.ratio());
    r.rounds.push_back(round);
  }
  return r;
}

Result<OverlapResult> MeasureCommOverlap(const Flags& f, const std::string& self,
                                         const std::string& mpirun, const std::string& dir) {
  Launch step{DpArgs(f, self, mpirun, "all", dir + "/overlap-step.jsonl"),
              dir + "/overlap-step.jsonl", "overlap-step", ""};
  Launch comm{DpArgs(f, self, mpirun, "all", dir + "/overlap-comm.jsonl"),
              dir + "/overlap-comm.jsonl", "overlap-comm", ""};
  comm.argv.push_back("--movement-only");
  std::vector<Launch> pair;
  for (int p = 0; p < kRanks; ++p) {
    const std::string trace = dir + "/overlap-compute-" + std::to_string(p) + ".trace.json";
    Launch one{PagedTrainArgs(f, self, f.batch / kRanks), trace,
               "overlap-compute-" + std::to_string(p), ""};
    one.argv.insert(one.argv.end(), {"--trace", trace});
    one.display = DisplayCommand(one.argv, self, mpirun, dir);
    pair.push_back(std::move(one));
  }
  OverlapResult r;
  r.step_command = step.display = DisplayCommand(step.argv, self, mpirun, dir);
  r.comm_only_command = comm.display = DisplayCommand(comm.argv, self, mpirun, dir);
  r.compute_only_command = pair[0].display;
  std::fprintf(stderr,
               "bench parallel: comm overlap: step %s\nbench parallel: comm-only %s\n"
               "bench parallel: compute-only, %d at once: %s\n",
               r.step_command.c_str(), r.comm_only_command.c_str(), kRanks,
               r.compute_only_command.c_str());
  static constexpr const char* kNames[3] = {"step", "comm-only", "compute-only"};
  for (int i = 0; i < f.overlap_rounds; ++i) {
    // Rotate which of the three goes first (Note [Comm overlap]).
    OverlapRound round;
    for (int k = 0; k < 3; ++k) {
      const int which = (i + k) % 3;
      round.order += std::string(k == 0 ? "" : ",") + kNames[which];
      if (which == 0) {
        STRATA_ASSIGN_OR_RETURN(round.step_s, MedianStepS(f, step, dir));
      } else if (which == 1) {
        STRATA_ASSIGN_OR_RETURN(round.comm_only_s, MedianStepS(f, comm, dir));
      } else {
        STRATA_ASSIGN_OR_RETURN(const std::vector<double> busy, ComputeOnlyPair(f, pair, dir));
        for (int p = 0; p < kRanks; ++p) round.compute_only_process_s[p] = busy[p];
        round.compute_only_s = *std::max_element(busy.begin(), busy.end());
      }
    }
    std::fprintf(stderr,
                 "bench parallel: overlap round %d/%d (%s): step %.4f s, comm-only %.4f s, "
                 "compute-only %.4f s, factor %.3f\n",
                 i + 1, f.overlap_rounds, round.order.c_str(), round.step_s, round.comm_only_s,
                 round.compute_only_s, round.factor());
    r.rounds.push_back(round);
  }
  return r;
}

}  // namespace strata::bench::parallel_bench
