// `strata bench parallel`, measurements 7 and 8 (bench/bench_parallel.h; Notes [Pipeline bubble]
// and [Schedule memory] in bench/bench_parallel.cc):
// 7. pipeline_bubble: `strata train --pp 2 --schedule 1f1b` with 8 micro-batches, its step time vs
//    the ideal pipeline step from the compute-queue busy time of single-rank runs of the whole
//    model, in rounds alternating which goes first. Target <= 1.15.
// 8. schedule_memory: rank 0's peak activation bytes of the same pp2 run under GPipe vs 1F1B.
//    Reported, no target.
// Their JSON fields and their table are here too.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>

#include "core/util/sizes.h"
#include "bench/bench_offload.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {
namespace {

int MicroBatchRows(const Flags& f) { return f.batch / kPpMicroBatches; }

// `strata train` of 2's model, global batch and seq in kPpMicroBatches micro-batches, `steps`
// steps, one thread, on the paged engine at its default budgets (what each run needs; --pp runs
// only there).
std::vector<std::string> PpTrainArgs(const Flags& f, const std::string& self, int steps) {
  std::vector<std::string> argv = {self, "train", "--model", f.model};
  argv.insert(argv.end(), {"--batch", std::to_string(f.batch), "--micro-batch",
                           std::to_string(MicroBatchRows(f)), "--seq", std::to_string(f.seq)});
  argv.insert(argv.end(), {"--steps", std::to_string(steps)});
  argv.insert(argv.end(), {"--threads", "1", "--engine", "paged"});
  return argv;
}

// kRanks pipeline stages under mpirun with --schedule `schedule` and --pp-partition auto, rank 0
// logging each step to `tag`.jsonl in `dir`, at `log_level` (info: the first line, the stages).
Launch PpLaunch(const Flags& f, const std::string& self, const std::string& mpirun,
                const std::string& dir, const std::string& tag, const std::string& schedule,
                int steps, const std::string& log_level) {
  Launch run{MpirunPrefix(mpirun, f.timeout_s, kRanks), dir + "/" + tag + ".jsonl", tag, ""};
  for (const std::string& a : PpTrainArgs(f, self, steps)) run.argv.push_back(a);
  run.argv.insert(run.argv.end(),
                  {"--pp", std::to_string(kRanks), "--schedule", schedule, "--pp-partition", "auto",
                   "--log-json", run.out_file, "--log-level", log_level});
  run.display = DisplayCommand(run.argv, self, mpirun, dir);
  return run;
}

// What a pp2 run's --log-json says (rank 0's, stage 0's).
struct PpLog {
  double step_s = 0, compute_comm_s = 0;  // medians over the steps after `warmup`
  uint64_t peak_activation_bytes = 0;     // the largest peak_bytes.activations of any step
};

Result<PpLog> ReadPpLog(const Flags& f, const std::string& path, int warmup) {
  std::ifstream in(path);
  std::vector<double> step_s, comm_s;
  PpLog log;
  const double tokens = double(f.batch) * f.seq;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step") || !j.contains("tokens_per_s")) continue;
    if (!j.contains("compute_comm_s") || !j.contains("peak_bytes") ||
        !j["peak_bytes"].contains("activations")) {
      return Status::Internal("bench parallel: " + path +
                              " has a step without compute_comm_s or peak_bytes.activations; is "
                              "this strata older than its --pp training?");
    }
    log.peak_activation_bytes =
        std::max(log.peak_activation_bytes, j["peak_bytes"]["activations"].get<uint64_t>());
    if (j["step"].get<long>() <= warmup) continue;
    const double t = j["tokens_per_s"].get<double>();
    step_s.push_back(t > 0 ? tokens / t : 0);
    comm_s.push_back(j["compute_comm_s"].get<double>());
  }
  if (step_s.empty()) {
    return Status::Internal("bench parallel: " + path + " holds no step after the " +
                            std::to_string(warmup) + " warmup steps; the run wrote no --log-json");
  }
  log.step_s = Median(step_s);
  log.compute_comm_s = Median(comm_s);
  return log;
}

// Runs `run` (its old log removed first, so that only this run's steps count).
Result<PpLog> RunPp(const Flags& f, const Launch& run, const std::string& dir, int warmup) {
  STRATA_RETURN_IF_ERROR(RunFresh(f, run, dir));
  return ReadPpLog(f, run.out_file, warmup);
}

// The pp2 half of a round: its step, its receive wait and its stages.
Status RunPp2(const Flags& f, const Launch& pp2, const std::string& dir, PpRound& round) {
  STRATA_ASSIGN_OR_RETURN(const PpLog log, RunPp(f, pp2, dir, f.warmup_steps));
  round.pp2_step_s = log.step_s;
  round.pp2_compute_comm_s = log.compute_comm_s;
  // RunChild wrote the whole stderr here; its result keeps only the tail.
  STRATA_ASSIGN_OR_RETURN(round.stages, ParsePpStages(ReadWholeFile(dir + "/" + pp2.tag + ".err")));
  return Status::Ok();
}

}  // namespace

double PpStages::imbalance() const {
  if (predicted_s.empty()) return 0;
  const double sum = std::accumulate(predicted_s.begin(), predicted_s.end(), 0.0);
  return *std::max_element(predicted_s.begin(), predicted_s.end()) /
         (sum / double(predicted_s.size()));
}

Result<PpStages> ParsePpStages(const std::string& stderr_text) {
  static constexpr const char kOpen[] = "stages (--pp-partition ", kEnd[] = " per micro-batch";
  const size_t open = stderr_text.find(kOpen);
  const size_t colon = open == std::string::npos ? open : stderr_text.find("): ", open);
  const size_t end = colon == std::string::npos ? colon : stderr_text.find(kEnd, colon);
  const auto fail = [&](const std::string& why) {
    const size_t from = open == std::string::npos ? 0 : open;
    return Status::Internal("bench parallel: the --pp run's " + why + "; its stderr: " +
                            stderr_text.substr(from, stderr_text.find('\n', from) - from));
  };
  if (end == std::string::npos) {
    return fail(
        "stderr holds no 'stages (--pp-partition ...): ... per micro-batch' line (is it "
        "logging at info level?)");
  }
  PpStages s;
  s.text = stderr_text.substr(colon + 3, end - colon - 3);
  std::istringstream parts(s.text);
  for (std::string part; std::getline(parts, part, ',');) {
    // "0: blocks 1-3 + embedding 51.21 ms": the number before the closing " ms".
    const size_t ms = part.rfind(" ms");
    const size_t num = ms == std::string::npos ? ms : part.rfind(' ', ms - 1);
    double v = 0;
    if (num == std::string::npos || std::sscanf(part.c_str() + num, "%lf", &v) != 1 || !(v > 0)) {
      return fail("stage '" + part + "' has no predicted time 'T ms'");
    }
    s.predicted_s.push_back(v * 1e-3);
  }
  if (s.predicted_s.size() != size_t(kRanks)) {
    return fail("stages name " + std::to_string(s.predicted_s.size()) + " stages, not " +
                std::to_string(kRanks));
  }
  return s;
}

double PpRound::ideal_step_s() const {
  return pp1_compute_s / kRanks * double(kPpMicroBatches + kRanks - 1) / kPpMicroBatches;
}

std::vector<double> PpResult::bubbles() const {
  std::vector<double> v;
  for (const PpRound& r : rounds) v.push_back(r.bubble());
  return v;
}

const PpRound& PpResult::median() const { return rounds[offload::MedianIndex(bubbles())]; }

Result<PpResult> MeasurePipelineBubble(const Flags& f, const std::string& self,
                                       const std::string& mpirun, const std::string& dir) {
  const int steps = f.warmup_steps + f.steps;
  const Launch pp2 = PpLaunch(f, self, mpirun, dir, "pp2", "1f1b", steps, "info");
  std::vector<Launch> pair;
  for (int p = 0; p < kRanks; ++p) {
    const std::string tag = "pp1-" + std::to_string(p), trace = dir + "/" + tag + ".trace.json";
    Launch one{PpTrainArgs(f, self, steps), trace, tag, ""};
    one.argv.insert(one.argv.end(), {"--log-level", "warn", "--trace", trace});
    one.display = DisplayCommand(one.argv, self, mpirun, dir);
    pair.push_back(std::move(one));
  }
  PpResult r;
  r.pp2_command = pp2.display;
  r.pp1_command = pair[0].display;
  std::fprintf(stderr, "bench parallel: pipeline bubble: %s\nbench parallel: vs %d at once: %s\n",
               r.pp2_command.c_str(), kRanks, r.pp1_command.c_str());
  for (int i = 0; i < f.pp_rounds; ++i) {
    // Alternate which goes first, so that a drift in the machine's speed favours neither.
    PpRound round;
    round.pp2_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == round.pp2_first) {
        STRATA_RETURN_IF_ERROR(RunPp2(f, pp2, dir, round));
        continue;
      }
      STRATA_ASSIGN_OR_RETURN(const std::vector<double> busy, ComputeOnlyPair(f, pair, dir));
      for (int p = 0; p < kRanks; ++p) round.pp1_compute_process_s[p] = busy[p];
      round.pp1_compute_s = *std::max_element(busy.begin(), busy.end());
    }
    std::fprintf(stderr,
                 "bench parallel: pp round %d/%d (%s first): --pp %d step %.4f s (receive wait "
                 "%.4f s), 1 rank compute %.4f s, ideal %.4f s, bubble %.3f; stages %s\n",
                 i + 1, f.pp_rounds, round.pp2_first ? "pp2" : "pp1", kRanks, round.pp2_step_s,
                 round.pp2_compute_comm_s, round.pp1_compute_s, round.ideal_step_s(),
                 round.bubble(), round.stages.text.c_str());
    r.rounds.push_back(round);
  }
  return r;
}

Result<ScheduleMemory> MeasureScheduleMemory(const Flags& f, const std::string& self,
                                             const std::string& mpirun, const std::string& dir) {
  ScheduleMemory m;
  for (const char* schedule : {"gpipe", "1f1b"}) {
    const Launch run = PpLaunch(f, self, mpirun, dir, std::string("memory-") + schedule, schedule,
                                m.steps, "warn");
    STRATA_ASSIGN_OR_RETURN(const PpLog log, RunPp(f, run, dir, 0));
    ScheduleRun& s = std::string(schedule) == "gpipe" ? m.gpipe : m.one_f_one_b;
    s.activation_bytes = log.peak_activation_bytes;
    s.command = run.display;
    std::fprintf(stderr, "bench parallel: schedule memory: %s: rank 0's activations %llu bytes\n",
                 s.command.c_str(), static_cast<unsigned long long>(s.activation_bytes));
  }
  if (m.one_f_one_b.activation_bytes == 0) {
    return Status::Internal("bench parallel: " + m.one_f_one_b.command +
                            " logged no activation bytes (peak_bytes.activations 0)");
  }
  return m;
}

namespace {

void AddBubble(const Flags& f, const PpResult& pp, nlohmann::ordered_json& out) {
  const PpRound& m = pp.median();
  out["pipeline_bubble"] = m.bubble();
  out["pipeline_bubble_target"] = kPipelineBubbleTarget;
  out["pipeline_bubble_rounds"] = pp.bubbles();
  out["pp2_step_s"] = m.pp2_step_s;
  out["pipeline_ideal_step_s"] = m.ideal_step_s();
  out["pp1_compute_s"] = m.pp1_compute_s;
  out["pp2_compute_comm_s"] = m.pp2_compute_comm_s;
  out["pp2_compute_comm_share"] = m.pp2_step_s > 0 ? m.pp2_compute_comm_s / m.pp2_step_s : 0;
  out["pp_stages"] = m.stages.text;
  out["pp_stage_predicted_s"] = m.stages.predicted_s;
  out["pp_stage_imbalance"] = m.stages.imbalance();
  std::vector<double> step, ideal, compute, comm;
  std::vector<std::vector<double>> per_process;
  std::vector<std::string> first, stages;
  for (const PpRound& r : pp.rounds) {
    step.push_back(r.pp2_step_s);
    ideal.push_back(r.ideal_step_s());
    compute.push_back(r.pp1_compute_s);
    per_process.emplace_back(r.pp1_compute_process_s, r.pp1_compute_process_s + kRanks);
    comm.push_back(r.pp2_compute_comm_s);
    first.push_back(r.pp2_first ? "pp2" : "pp1");
    stages.push_back(r.stages.text);
  }
  out["pp2_step_s_rounds"] = step;
  out["pipeline_ideal_step_s_rounds"] = ideal;
  out["pp1_compute_s_rounds"] = compute;
  out["pp1_compute_process_s_rounds"] = per_process;
  out["pp2_compute_comm_s_rounds"] = comm;
  out["pp_first_rounds"] = first;
  out["pp_stages_rounds"] = stages;
  out["pp2_command"] = pp.pp2_command;
  out["pp1_command"] = pp.pp1_command;
  out["pp_model"] = f.model;
  out["pp_batch"] = f.batch;
  out["pp_micro_batch"] = MicroBatchRows(f);
  out["pp_micro_batches"] = kPpMicroBatches;
  out["pp_seq"] = f.seq;
  out["pp_steps"] = f.steps;
  out["pp_warmup_steps"] = f.warmup_steps;
}

void PrintBubble(const Flags& f, const PpResult& pp, std::FILE* out) {
  std::fprintf(out,
               "7. pipeline bubble: --pp %d --schedule 1f1b (%d ranks x 1 thread) vs the ideal "
               "T1 / %d x (%d + %d - 1) / %d, T1 = 1 rank x 1 thread's compute-queue busy time "
               "(%d at once, the slower), paged engine, %s, batch %d in %d micro-batches of %d x "
               "seq %d, median of %d steps after %d warmup, %d round(s)\n",
               kRanks, kRanks, kRanks, kPpMicroBatches, kRanks, kPpMicroBatches, kRanks,
               f.model.c_str(), f.batch, kPpMicroBatches, MicroBatchRows(f), f.seq, f.steps,
               f.warmup_steps, f.pp_rounds);
  std::fprintf(out, "   %-6s %-6s %12s %12s %13s %9s %15s  %s\n", "round", "first", "pp2 step ms",
               "T1 ms", "ideal step ms", "bubble", "recv wait ms",
               "stages (predicted per "
               "micro-batch)");
  for (size_t i = 0; i < pp.rounds.size(); ++i) {
    const PpRound& r = pp.rounds[i];
    std::fprintf(out, "   %-6zu %-6s %12.1f %12.1f %13.1f %9.3f %15.1f  %s\n", i + 1,
                 r.pp2_first ? "pp2" : "pp1", r.pp2_step_s * 1e3, r.pp1_compute_s * 1e3,
                 r.ideal_step_s() * 1e3, r.bubble(), r.pp2_compute_comm_s * 1e3,
                 r.stages.text.c_str());
  }
  const PpRound& m = pp.median();
  std::fprintf(out,
               "   pipeline_bubble %.3f (median round; pp2 step / ideal)  target <= %.2f  %s; "
               "stage 0 waits in receives %.3f of its step, predicted stage imbalance %.3f\n",
               m.bubble(), kPipelineBubbleTarget,
               m.bubble() <= kPipelineBubbleTarget ? "met" : "MISSED",
               m.pp2_step_s > 0 ? m.pp2_compute_comm_s / m.pp2_step_s : 0, m.stages.imbalance());
  std::fprintf(out, "   %s\n   vs %s (%d at once)\n", pp.pp2_command.c_str(),
               pp.pp1_command.c_str(), kRanks);
}

}  // namespace

void AddPpReport(const Flags& f, const PpResult* pp, const ScheduleMemory* memory,
                 nlohmann::ordered_json& out) {
  if (pp != nullptr) AddBubble(f, *pp, out);
  if (memory == nullptr) return;
  out["schedule_memory"] = memory->ratio();
  out["schedule_memory_gpipe_activation_bytes"] = memory->gpipe.activation_bytes;
  out["schedule_memory_1f1b_activation_bytes"] = memory->one_f_one_b.activation_bytes;
  out["schedule_memory_gpipe_command"] = memory->gpipe.command;
  out["schedule_memory_1f1b_command"] = memory->one_f_one_b.command;
  out["schedule_memory_steps"] = memory->steps;
  out["schedule_memory_micro_batches"] = kPpMicroBatches;
}

void PrintPpTable(const Flags& f, const PpResult* pp, const ScheduleMemory* memory,
                  std::FILE* out) {
  if (pp != nullptr) PrintBubble(f, *pp, out);
  if (memory != nullptr) {
    std::fprintf(out,
                 "8. schedule memory: --pp %d with %d micro-batches, rank 0's (stage 0's) peak "
                 "activation bytes over %d steps\n   gpipe %s, 1f1b %s\n   schedule_memory %.3f "
                 "(gpipe / 1f1b)  report (no target)\n   %s\n   vs %s\n",
                 kRanks, kPpMicroBatches, memory->steps,
                 FormatBytes(memory->gpipe.activation_bytes).c_str(),
                 FormatBytes(memory->one_f_one_b.activation_bytes).c_str(), memory->ratio(),
                 memory->gpipe.command.c_str(), memory->one_f_one_b.command.c_str());
  }
  std::fflush(out);
}

}  // namespace strata::bench::parallel_bench
