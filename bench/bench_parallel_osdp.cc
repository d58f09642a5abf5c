// `strata bench parallel`, measurement 5 (bench/bench_parallel.h; Note [OSDP vs ZeRO-3] in
// bench/bench_parallel.cc): osdp_vs_zero3, `strata train --dp 2 --shard auto` vs `--shard all`
// with the same budgets, each run's median step time, in rounds alternating which goes first;
// beside it what the auto run predicted for its choice and for every block sharded. Reported, no
// target. Its JSON fields and its table are here too.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/util/sizes.h"
#include "bench/bench_offload.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {
namespace {

// 3's data-parallel run with 5's host budget and page size, --shard `shard`, logging at info
// level (the auto run's first line, its choice, is an info line; both runs log alike).
Launch OsdpLaunch(const Flags& f, const std::string& self, const std::string& mpirun,
                  const std::string& dir, const std::string& shard) {
  Flags g = f;
  g.host_mem = f.osdp_host_mem;
  const std::string tag = "osdp-" + shard, log = dir + "/" + tag + ".jsonl";
  Launch run{DpArgs(g, self, mpirun, shard, log), log, tag, ""};
  for (size_t i = 0; i + 1 < run.argv.size(); ++i) {
    if (run.argv[i] == "--log-level") run.argv[i + 1] = "info";
  }
  run.argv.insert(run.argv.end(), {"--page-size", f.osdp_page_size});
  run.display = DisplayCommand(run.argv, self, mpirun, dir);
  return run;
}

}  // namespace

Result<OsdpChoice> ParseOsdpChoice(const std::string& stderr_text) {
  std::istringstream lines(stderr_text);
  std::string grid;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("grid: dp ") != std::string::npos) {
      grid = line;
      break;
    }
  }
  const auto fail = [&](const std::string& why) {
    return Status::Internal("bench parallel: the --shard auto run's " + why + "; its first line: " +
                            (grid.empty() ? stderr_text.substr(0, stderr_text.find('\n')) : grid));
  };
  if (grid.empty()) return fail("stderr holds no 'grid: dp' line (is it logging at info level?)");
  static constexpr const char kBlocks[] = "| blocks ",
                              kAuto[] = " (--shard auto: ", kEnd[] = "), split-ops";
  const size_t blocks = grid.find(kBlocks);
  const size_t open = blocks == std::string::npos ? blocks : grid.find(kAuto, blocks);
  const size_t end = open == std::string::npos ? open : grid.find(kEnd, open);
  if (end == std::string::npos) return fail("grid line holds no '(--shard auto: ...)' choice");
  OsdpChoice c;
  const size_t from = blocks + sizeof kBlocks - 1;
  c.decision = grid.substr(from, open - from);
  c.text = grid.substr(open + 2, end - open - 2);
  double a = 0, s = 0, r = 0;
  if (std::sscanf(c.text.c_str(),
                  "--shard auto: predicted step %lf ms (every block sharded %lf ms, every block "
                  "replicated %lf ms)",
                  &a, &s, &r) != 3 ||
      !(a > 0) || !(s > 0) || !(r > 0)) {
    return fail(
        "choice has no 'predicted step A ms (every block sharded B ms, every block "
        "replicated C ms)'");
  }
  c.predicted_auto_s = a * 1e-3;
  c.predicted_all_sharded_s = s * 1e-3;
  c.predicted_all_replicated_s = r * 1e-3;
  return c;
}

std::vector<double> OsdpResult::ratios() const {
  std::vector<double> v;
  for (const OsdpRound& r : rounds) v.push_back(r.ratio());
  return v;
}

const OsdpRound& OsdpResult::median() const { return rounds[offload::MedianIndex(ratios())]; }

Result<OsdpResult> MeasureOsdp(const Flags& f, const std::string& self, const std::string& mpirun,
                               const std::string& dir) {
  const Launch autos = OsdpLaunch(f, self, mpirun, dir, "auto");
  const Launch all = OsdpLaunch(f, self, mpirun, dir, "all");
  OsdpResult r;
  r.auto_command = autos.display;
  r.all_command = all.display;
  std::fprintf(stderr, "bench parallel: osdp vs zero3: %s\nbench parallel: vs %s\n",
               r.auto_command.c_str(), r.all_command.c_str());
  for (int i = 0; i < f.osdp_rounds; ++i) {
    // Alternate which goes first, so that a drift in the machine's speed favours neither.
    OsdpRound round;
    round.auto_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool is_auto = (k == 0) == round.auto_first;
      const Launch& run = is_auto ? autos : all;
      STRATA_ASSIGN_OR_RETURN(const double step_s, MedianStepS(f, run, dir));
      (is_auto ? round.auto_step_s : round.all_step_s) = step_s;
      if (is_auto) {
        // RunChild wrote the whole stderr here; its result keeps only the tail.
        STRATA_ASSIGN_OR_RETURN(round.choice,
                                ParseOsdpChoice(ReadWholeFile(dir + "/" + run.tag + ".err")));
      }
    }
    std::fprintf(stderr,
                 "bench parallel: osdp round %d/%d (%s first): --shard auto %.4g ms (blocks %s), "
                 "--shard all %.4g ms, all / auto %.3f (predicted %.3f)\n",
                 i + 1, f.osdp_rounds, round.auto_first ? "auto" : "all", round.auto_step_s * 1e3,
                 round.choice.decision.c_str(), round.all_step_s * 1e3, round.ratio(),
                 round.predicted_ratio());
    r.rounds.push_back(round);
  }
  return r;
}

void AddOsdpReport(const Flags& f, const OsdpResult* osdp, nlohmann::ordered_json& out) {
  if (osdp == nullptr) return;
  const OsdpRound& m = osdp->median();
  out["osdp_vs_zero3"] = m.ratio();
  out["osdp_vs_zero3_rounds"] = osdp->ratios();
  out["osdp_auto_step_s"] = m.auto_step_s;
  out["osdp_all_step_s"] = m.all_step_s;
  out["osdp_predicted_auto_step_s"] = m.choice.predicted_auto_s;
  out["osdp_predicted_all_sharded_step_s"] = m.choice.predicted_all_sharded_s;
  out["osdp_predicted_all_replicated_step_s"] = m.choice.predicted_all_replicated_s;
  out["osdp_predicted_ratio"] = m.predicted_ratio();
  out["osdp_decision"] = m.choice.decision;
  out["osdp_choice"] = m.choice.text;
  std::vector<double> auto_s, all_s, pred_auto, pred_all, pred_ratio;
  std::vector<std::string> first, decision;
  for (const OsdpRound& r : osdp->rounds) {
    auto_s.push_back(r.auto_step_s);
    all_s.push_back(r.all_step_s);
    pred_auto.push_back(r.choice.predicted_auto_s);
    pred_all.push_back(r.choice.predicted_all_sharded_s);
    pred_ratio.push_back(r.predicted_ratio());
    first.push_back(r.auto_first ? "auto" : "all");
    decision.push_back(r.choice.decision);
  }
  out["osdp_auto_step_s_rounds"] = auto_s;
  out["osdp_all_step_s_rounds"] = all_s;
  out["osdp_predicted_auto_step_s_rounds"] = pred_auto;
  out["osdp_predicted_all_sharded_step_s_rounds"] = pred_all;
  out["osdp_predicted_ratio_rounds"] = pred_ratio;
  out["osdp_first_rounds"] = first;
  out["osdp_decision_rounds"] = decision;
  out["osdp_auto_command"] = osdp->auto_command;
  out["osdp_all_command"] = osdp->all_command;
  AddRunConfig("osdp", f, f.osdp_host_mem, out);  // both runs
  out["osdp_page_size"] = FlagBytes(f.osdp_page_size);
}

void PrintOsdpTable(const Flags& f, const OsdpResult* osdp, std::FILE* out) {
  if (osdp == nullptr) return;
  std::fprintf(out,
               "5. OSDP vs ZeRO-3: %d ranks x 1 thread, --shard auto vs all, paged engine, %s, "
               "batch %d x seq %d, --gpu-mem %s --host-mem %s --page-size %s, median of %d steps "
               "after %d warmup, %d round(s)\n",
               kRanks, f.model.c_str(), f.batch, f.seq, f.gpu_mem.c_str(), f.osdp_host_mem.c_str(),
               f.osdp_page_size.c_str(), f.steps, f.warmup_steps, f.osdp_rounds);
  std::fprintf(out, "   %-6s %-6s %12s %12s %9s %17s %17s %9s  %s\n", "round", "first",
               "auto step ms", "all step ms", "all/auto", "predicted auto ms", "predicted all ms",
               "predicted", "auto's blocks");
  for (size_t i = 0; i < osdp->rounds.size(); ++i) {
    const OsdpRound& r = osdp->rounds[i];
    std::fprintf(out, "   %-6zu %-6s %12.4g %12.4g %9.3f %17.4g %17.4g %9.3f  %s\n", i + 1,
                 r.auto_first ? "auto" : "all", r.auto_step_s * 1e3, r.all_step_s * 1e3, r.ratio(),
                 r.choice.predicted_auto_s * 1e3, r.choice.predicted_all_sharded_s * 1e3,
                 r.predicted_ratio(), r.choice.decision.c_str());
  }
  const OsdpRound& m = osdp->median();
  std::fprintf(out,
               "   osdp_vs_zero3 %.3f (median round; --shard all / --shard auto step time, > 1: "
               "auto is faster), predicted %.3f  report (no target)\n",
               m.ratio(), m.predicted_ratio());
  std::fprintf(out, "   auto chose blocks %s (%s)\n", m.choice.decision.c_str(),
               m.choice.text.c_str());
  std::fprintf(out, "   %s\n   vs %s\n", osdp->auto_command.c_str(), osdp->all_command.c_str());
  std::fflush(out);
}

}  // namespace strata::bench::parallel_bench
