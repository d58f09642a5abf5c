// `strata bench parallel`: its JSON object and its table (bench/bench_parallel.h).
#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/util/sizes.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {
namespace {

std::string Today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &local);
  return buf;
}

void AddCollectives(const Flags& f, const CollectivesResult& c, nlohmann::ordered_json& out) {
  out["collective_efficiency"] = c.efficiency;
  out["collective_efficiency_all_gather"] = c.all_gather;
  out["collective_efficiency_reduce_scatter"] = c.reduce_scatter;
  out["collective_efficiency_target"] = kCollectiveTarget;
  out["collective_efficiency_sizes"] = c.efficiency_sizes;
  out["collective_rounds"] = f.collective_rounds;
  out["mpi_thread_level"] = c.thread_level;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const CollectiveSample& s : c.samples) {
    list.push_back({{"op", s.op},
                    {"bytes", s.bytes},
                    {"strata_bytes_per_s", s.strata_bytes_per_s},
                    {"mpi_bytes_per_s", s.mpi_bytes_per_s},
                    {"ratio", s.ratio},
                    {"strata_s", s.strata_s},
                    {"mpi_s", s.mpi_s},
                    {"outputs_equal", s.outputs_equal}});
  }
  out["collectives"] = std::move(list);
  out["collectives_command"] = c.command;
}

void AddDp(const Flags& f, const DpResult& dp, nlohmann::ordered_json& out) {
  out["dp_scaling"] = dp.median().ratio();
  out["dp_scaling_target"] = kDpScalingTarget;
  out["dp_scaling_rounds"] = dp.ratios();
  out["dp2_tokens_per_s"] = dp.median().dp2_tokens_per_s;
  out["dp1_tokens_per_s"] = dp.median().dp1_tokens_per_s;
  std::vector<double> dp2, dp1;
  for (const DpRound& r : dp.rounds) {
    dp2.push_back(r.dp2_tokens_per_s);
    dp1.push_back(r.dp1_tokens_per_s);
  }
  out["dp2_tokens_per_s_rounds"] = dp2;
  out["dp1_tokens_per_s_rounds"] = dp1;
  out["dp_model"] = f.model;
  out["dp_batch"] = f.batch;
  out["dp_seq"] = f.seq;
  out["dp_steps"] = f.steps;
  out["dp_warmup_steps"] = f.warmup_steps;
  out["dp2_command"] = dp.dp2_command;
  out["dp1_command"] = dp.dp1_command;
}

const char* Verdict(double value, double target) { return value >= target ? "met" : "MISSED"; }

void PrintCollectives(const Flags& f, const CollectivesResult& c, std::FILE* s) {
  std::fprintf(s,
               "1. collectives: the Comm (mpi backend) vs raw MPI, %d ranks, the slowest rank's "
               "time, median of %d rounds (MPI thread level %s)\n",
               kRanks, f.collective_rounds, c.thread_level.c_str());
  std::fprintf(s, "   %-15s %10s %14s %14s %7s  %s\n", "op", "size", "Strata MiB/s", "MPI MiB/s",
               "ratio", "outputs");
  for (const CollectiveSample& x : c.samples) {
    std::fprintf(s, "   %-15s %10s %14.1f %14.1f %7.3f  %s\n", x.op.c_str(),
                 FormatBytes(x.bytes).c_str(), x.strata_bytes_per_s / double(kMiB),
                 x.mpi_bytes_per_s / double(kMiB), x.ratio, x.outputs_equal ? "equal" : "DIFFER");
  }
  const uint64_t from = c.efficiency_sizes.empty() ? 0 : c.efficiency_sizes.front();
  std::fprintf(s,
               "   collective_efficiency %.3f (all_gather %.3f, reduce_scatter %.3f; sizes >= "
               "%s)  target >= %.2f  %s\n",
               c.efficiency, c.all_gather, c.reduce_scatter, FormatBytes(from).c_str(),
               kCollectiveTarget, Verdict(c.efficiency, kCollectiveTarget));
}

void PrintDp(const Flags& f, const DpResult& dp, std::FILE* s) {
  std::fprintf(s,
               "2. data-parallel scaling: %s, batch %d x seq %d, median of %d steps after %d "
               "warmup, %d round(s)\n",
               f.model.c_str(), f.batch, f.seq, f.steps, f.warmup_steps, f.rounds);
  const std::string ranks = std::to_string(kRanks);
  std::fprintf(s, "   %-6s %24s %24s %7s\n", "round", (ranks + " ranks x 1 thread tok/s").c_str(),
               ("1 rank x " + ranks + " threads tok/s").c_str(), "ratio");
  for (size_t i = 0; i < dp.rounds.size(); ++i) {
    const DpRound& r = dp.rounds[i];
    std::fprintf(s, "   %-6zu %24.0f %24.0f %7.3f\n", i + 1, r.dp2_tokens_per_s, r.dp1_tokens_per_s,
                 r.ratio());
  }
  const double v = dp.median().ratio();
  std::fprintf(s, "   dp_scaling %.3f (median round)  target >= %.2f  %s\n", v, kDpScalingTarget,
               Verdict(v, kDpScalingTarget));
  std::fprintf(s, "   %s\n   vs %s\n", dp.dp2_command.c_str(), dp.dp1_command.c_str());
}

}  // namespace

void AddReport(const Flags& f, const CollectivesResult* coll, const DpResult* dp,
               nlohmann::ordered_json& out) {
  out["bench"] = "parallel";
  out["date"] = Today();
  out["cpu_cores"] = std::max(1u, std::thread::hardware_concurrency());
  out["ranks"] = kRanks;
  if (coll != nullptr) AddCollectives(f, *coll, out);
  if (dp != nullptr) AddDp(f, *dp, out);
}

void PrintTable(const Flags& f, const CollectivesResult* coll, const DpResult* dp,
                std::FILE* stream) {
  std::fprintf(stream, "strata bench parallel: %d ranks on %u cores, %s\n", kRanks,
               std::max(1u, std::thread::hardware_concurrency()), Today().c_str());
  if (coll != nullptr) PrintCollectives(f, *coll, stream);
  if (dp != nullptr) PrintDp(f, *dp, stream);
  std::fflush(stream);
}

}  // namespace strata::bench::parallel_bench
