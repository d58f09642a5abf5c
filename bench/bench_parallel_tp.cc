// `strata bench parallel`, measurement 6 (bench/bench_parallel.h; Note [Tensor-parallel
// efficiency] in bench/bench_parallel.cc): tp_efficiency, `strata train --tp 2` as 2 ranks of 1
// thread vs 1 rank of 2 threads, both on the paged engine, tokens/s, in rounds alternating which
// goes first; beside it tp_allreduce_share, the part of the tp2 step its compute stream spends
// waiting in its own tp all-reduces. Reported, no target. Its JSON fields and its table are here
// too.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_offload.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {
namespace {

// `strata train` of 2's model, global batch, seq and steps on the paged engine at its default
// budgets (what each run needs), rank 0 logging each step to `log_json`.
std::vector<std::string> TpTrainArgs(const Flags& f, const std::string& self,
                                     const std::string& log_json) {
  std::vector<std::string> args = TrainRunArgs(f, self, log_json);
  args.insert(args.end(), {"--engine", "paged"});
  return args;
}

// One run's medians over its counted steps (TpRound's fields).
struct TpRun {
  double tokens_per_s = 0, step_s = 0, compute_comm_s = 0, allreduce_share = 0;
};

// Reads the steps after the warmup from a --log-json file (one step a line): tokens_per_s, and
// compute_comm_s (which the tp2 run must log).
Result<TpRun> ReadTpRun(const Flags& f, const std::string& path, bool need_comm) {
  std::ifstream in(path);
  std::vector<double> tps, step_s, comm_s;
  const double tokens = double(f.batch) * f.seq;
  bool comm_missing = false;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step") || !j.contains("tokens_per_s")) continue;
    if (j["step"].get<long>() <= f.warmup_steps) continue;
    const double t = j["tokens_per_s"].get<double>();
    const double s = t > 0 ? tokens / t : 0;
    const double c = j.value("compute_comm_s", std::numeric_limits<double>::quiet_NaN());
    comm_missing = comm_missing || std::isnan(c);
    tps.push_back(t);
    step_s.push_back(s);
    comm_s.push_back(c);
  }
  if (tps.empty()) {
    return Status::Internal("bench parallel: " + path + " holds no step after the " +
                            std::to_string(f.warmup_steps) +
                            " warmup steps; the run wrote no --log-json");
  }
  if (need_comm && comm_missing) {
    return Status::Internal("bench parallel: " + path +
                            " has a step without compute_comm_s (the tp all-reduce wait); is "
                            "this strata older than its --tp training?");
  }
  TpRun r{Median(tps), Median(step_s), 0, 0};
  if (need_comm) {
    r.compute_comm_s = Median(comm_s);
    r.allreduce_share = r.step_s > 0 ? r.compute_comm_s / r.step_s : 0;
  }
  return r;
}

// Runs `run` (its old log removed first, so that only this run's steps count).
Result<TpRun> RunTp(const Flags& f, const Launch& run, const std::string& dir, bool tp2) {
  STRATA_RETURN_IF_ERROR(RunFresh(f, run, dir));
  return ReadTpRun(f, run.out_file, tp2);
}

}  // namespace

std::vector<double> TpResult::ratios() const {
  std::vector<double> v;
  for (const TpRound& r : rounds) v.push_back(r.ratio());
  return v;
}

std::vector<double> TpResult::allreduce_shares() const {
  std::vector<double> v;
  for (const TpRound& r : rounds) v.push_back(r.tp2_allreduce_share);
  return v;
}

const TpRound& TpResult::median() const { return rounds[offload::MedianIndex(ratios())]; }

double TpResult::allreduce_share() const { return Median(allreduce_shares()); }

Result<TpResult> MeasureTpEfficiency(const Flags& f, const std::string& self,
                                     const std::string& mpirun, const std::string& dir) {
  Launch tp2{MpirunPrefix(mpirun, f.timeout_s, kRanks), dir + "/tp2.jsonl", "tp2", ""};
  for (const std::string& a : TpTrainArgs(f, self, tp2.out_file)) tp2.argv.push_back(a);
  tp2.argv.insert(tp2.argv.end(), {"--tp", std::to_string(kRanks), "--threads", "1"});
  Launch tp1{TpTrainArgs(f, self, dir + "/tp1.jsonl"), dir + "/tp1.jsonl", "tp1", ""};
  tp1.argv.insert(tp1.argv.end(), {"--threads", std::to_string(kRanks)});
  TpResult r;
  r.tp2_command = tp2.display = DisplayCommand(tp2.argv, self, mpirun, dir);
  r.tp1_command = tp1.display = DisplayCommand(tp1.argv, self, mpirun, dir);
  std::fprintf(stderr, "bench parallel: tp: %s\nbench parallel: vs %s\n", r.tp2_command.c_str(),
               r.tp1_command.c_str());
  for (int i = 0; i < f.tp_rounds; ++i) {
    // Alternate which goes first, so that a drift in the machine's speed favours neither.
    TpRound round;
    round.tp2_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool is_tp2 = (k == 0) == round.tp2_first;
      STRATA_ASSIGN_OR_RETURN(const TpRun run, RunTp(f, is_tp2 ? tp2 : tp1, dir, is_tp2));
      if (!is_tp2) {
        round.tp1_tokens_per_s = run.tokens_per_s;
        continue;
      }
      round.tp2_tokens_per_s = run.tokens_per_s;
      round.tp2_step_s = run.step_s;
      round.tp2_compute_comm_s = run.compute_comm_s;
      round.tp2_allreduce_share = run.allreduce_share;
    }
    std::fprintf(stderr,
                 "bench parallel: tp round %d/%d (%s first): --tp %d %.0f tokens/s (all-reduce "
                 "share %.3f), 1 rank x %d threads %.0f tokens/s, ratio %.3f\n",
                 i + 1, f.tp_rounds, round.tp2_first ? "tp2" : "tp1", kRanks,
                 round.tp2_tokens_per_s, round.tp2_allreduce_share, kRanks, round.tp1_tokens_per_s,
                 round.ratio());
    r.rounds.push_back(round);
  }
  return r;
}

void AddTpReport(const Flags& f, const TpResult* tp, nlohmann::ordered_json& out) {
  if (tp == nullptr) return;
  const TpRound& m = tp->median();
  out["tp_efficiency"] = m.ratio();
  out["tp_efficiency_rounds"] = tp->ratios();
  out["tp2_tokens_per_s"] = m.tp2_tokens_per_s;
  out["tp1_tokens_per_s"] = m.tp1_tokens_per_s;
  out["tp_allreduce_share"] = tp->allreduce_share();
  out["tp_allreduce_share_rounds"] = tp->allreduce_shares();
  out["tp2_step_s"] = m.tp2_step_s;
  out["tp2_compute_comm_s"] = m.tp2_compute_comm_s;
  std::vector<double> tp2, tp1, step, comm;
  std::vector<std::string> first;
  for (const TpRound& r : tp->rounds) {
    tp2.push_back(r.tp2_tokens_per_s);
    tp1.push_back(r.tp1_tokens_per_s);
    step.push_back(r.tp2_step_s);
    comm.push_back(r.tp2_compute_comm_s);
    first.push_back(r.tp2_first ? "tp2" : "tp1");
  }
  out["tp2_tokens_per_s_rounds"] = tp2;
  out["tp1_tokens_per_s_rounds"] = tp1;
  out["tp2_step_s_rounds"] = step;
  out["tp2_compute_comm_s_rounds"] = comm;
  out["tp_first_rounds"] = first;
  out["tp2_command"] = tp->tp2_command;
  out["tp1_command"] = tp->tp1_command;
  out["tp_model"] = f.model;
  out["tp_batch"] = f.batch;
  out["tp_seq"] = f.seq;
  out["tp_steps"] = f.steps;
  out["tp_warmup_steps"] = f.warmup_steps;
}

void PrintTpTable(const Flags& f, const TpResult* tp, std::FILE* out) {
  if (tp == nullptr) return;
  std::fprintf(out,
               "6. tensor-parallel efficiency: --tp %d (%d ranks x 1 thread) vs 1 rank x %d "
               "threads, paged engine, %s, batch %d x seq %d, median of %d steps after %d "
               "warmup, %d round(s)\n",
               kRanks, kRanks, kRanks, f.model.c_str(), f.batch, f.seq, f.steps, f.warmup_steps,
               f.tp_rounds);
  std::fprintf(out, "   %-6s %-6s %12s %14s %7s %12s %16s %9s\n", "round", "first", "tp2 tok/s",
               "1 rank tok/s", "ratio", "tp2 step ms", "all-reduce ms", "share");
  for (size_t i = 0; i < tp->rounds.size(); ++i) {
    const TpRound& r = tp->rounds[i];
    std::fprintf(out, "   %-6zu %-6s %12.0f %14.0f %7.3f %12.1f %16.1f %9.3f\n", i + 1,
                 r.tp2_first ? "tp2" : "tp1", r.tp2_tokens_per_s, r.tp1_tokens_per_s, r.ratio(),
                 r.tp2_step_s * 1e3, r.tp2_compute_comm_s * 1e3, r.tp2_allreduce_share);
  }
  std::fprintf(out,
               "   tp_efficiency %.3f (median round; --tp %d / 1 rank tokens/s)  report (no "
               "target)\n   tp_allreduce_share %.3f (median of the rounds; the tp2 step's compute "
               "stream waiting in its tp all-reduces, rank 0)  report (no target)\n",
               tp->median().ratio(), kRanks, tp->allreduce_share());
  std::fprintf(out, "   %s\n   vs %s\n", tp->tp2_command.c_str(), tp->tp1_command.c_str());
  std::fflush(out);
}

}  // namespace strata::bench::parallel_bench
