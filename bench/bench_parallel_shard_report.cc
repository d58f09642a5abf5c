// `strata bench parallel`: the JSON fields and the table of measurements 3 (shard_cost) and 4
// (comm_overlap) (bench/bench_parallel.h; what they measure: bench/bench_parallel.cc).
#include <nlohmann/json.hpp>

#include "core/util/sizes.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {

uint64_t FlagBytes(const std::string& text) {
  const Result<uint64_t> b = ParseBytes(text, "a size flag");
  return b.ok() ? b.value() : 0;
}

void AddRunConfig(const std::string& prefix, const Flags& f, const std::string& host_mem,
                  nlohmann::ordered_json& out) {
  out[prefix + "_model"] = f.model;
  out[prefix + "_batch"] = f.batch;
  out[prefix + "_seq"] = f.seq;
  out[prefix + "_steps"] = f.steps;
  out[prefix + "_warmup_steps"] = f.warmup_steps;
  out[prefix + "_gpu_mem"] = FlagBytes(f.gpu_mem);
  out[prefix + "_host_mem"] = FlagBytes(host_mem);
}

namespace {

void AddShard(const ShardResult& s, nlohmann::ordered_json& out) {
  out["shard_cost"] = s.median().ratio();
  out["shard_cost_target"] = kShardCostTarget;
  out["shard_cost_rounds"] = s.ratios();
  out["shard_all_tokens_per_s"] = s.median().all_tokens_per_s;
  out["shard_none_tokens_per_s"] = s.median().none_tokens_per_s;
  std::vector<double> all, none;
  std::vector<std::string> first;
  for (const ShardRound& r : s.rounds) {
    all.push_back(r.all_tokens_per_s);
    none.push_back(r.none_tokens_per_s);
    first.push_back(r.all_first ? "all" : "none");
  }
  out["shard_all_tokens_per_s_rounds"] = all;
  out["shard_none_tokens_per_s_rounds"] = none;
  out["shard_first_rounds"] = first;
  out["shard_all_command"] = s.all_command;
  out["shard_none_command"] = s.none_command;
}

void AddOverlap(const OverlapResult& o, nlohmann::ordered_json& out) {
  const OverlapRound& m = o.median();
  out["comm_overlap"] = m.factor();
  out["comm_overlap_target"] = kCommOverlapTarget;
  out["comm_overlap_rounds"] = o.factors();
  out["comm_overlap_step_s"] = m.step_s;
  out["comm_overlap_comm_only_s"] = m.comm_only_s;
  out["comm_overlap_compute_only_s"] = m.compute_only_s;
  std::vector<double> step, comm, compute;
  std::vector<std::vector<double>> per_process;
  std::vector<std::string> order;
  for (const OverlapRound& r : o.rounds) {
    step.push_back(r.step_s);
    comm.push_back(r.comm_only_s);
    compute.push_back(r.compute_only_s);
    per_process.emplace_back(r.compute_only_process_s, r.compute_only_process_s + kRanks);
    order.push_back(r.order);
  }
  out["comm_overlap_step_s_rounds"] = step;
  out["comm_overlap_comm_only_s_rounds"] = comm;
  out["comm_overlap_compute_only_s_rounds"] = compute;
  out["comm_overlap_compute_only_process_s_rounds"] = per_process;
  out["comm_overlap_order_rounds"] = order;
  out["comm_overlap_step_command"] = o.step_command;
  out["comm_overlap_comm_only_command"] = o.comm_only_command;
  out["comm_overlap_compute_only_command"] = o.compute_only_command;
}

void PrintShard(const Flags& f, const ShardResult& s, std::FILE* out) {
  std::fprintf(out,
               "3. shard cost: %d ranks x 1 thread, --shard all vs none, paged engine, %s, batch "
               "%d x seq %d, --gpu-mem %s --host-mem %s, median of %d steps after %d warmup, %d "
               "round(s)\n",
               kRanks, f.model.c_str(), f.batch, f.seq, f.gpu_mem.c_str(), f.host_mem.c_str(),
               f.steps, f.warmup_steps, f.shard_rounds);
  std::fprintf(out, "   %-6s %-6s %18s %19s %7s\n", "round", "first", "--shard all tok/s",
               "--shard none tok/s", "ratio");
  for (size_t i = 0; i < s.rounds.size(); ++i) {
    const ShardRound& r = s.rounds[i];
    std::fprintf(out, "   %-6zu %-6s %18.0f %19.0f %7.3f\n", i + 1, r.all_first ? "all" : "none",
                 r.all_tokens_per_s, r.none_tokens_per_s, r.ratio());
  }
  const double v = s.median().ratio();
  std::fprintf(out, "   shard_cost %.3f (median round)  target >= %.2f  %s\n", v, kShardCostTarget,
               v >= kShardCostTarget ? "met" : "MISSED");
  std::fprintf(out, "   %s\n   vs %s\n", s.all_command.c_str(), s.none_command.c_str());
}

void PrintOverlap(const Flags& f, const OverlapResult& o, std::FILE* out) {
  std::fprintf(out,
               "4. comm overlap: the --shard all step vs max(compute-only, comm-only), median "
               "step times of %d steps after %d warmup, %d round(s)\n",
               f.steps, f.warmup_steps, f.overlap_rounds);
  std::fprintf(out, "   %-6s %10s %12s %15s %18s %7s  %s\n", "round", "step s", "comm-only s",
               "compute-only s", "(per process)", "factor", "order");
  for (size_t i = 0; i < o.rounds.size(); ++i) {
    const OverlapRound& r = o.rounds[i];
    static_assert(kRanks == 2, "the column shows two processes");
    char each[48];
    std::snprintf(each, sizeof each, "%.4f, %.4f", r.compute_only_process_s[0],
                  r.compute_only_process_s[1]);
    std::fprintf(out, "   %-6zu %10.4f %12.4f %15.4f %18s %7.3f  %s\n", i + 1, r.step_s,
                 r.comm_only_s, r.compute_only_s, each, r.factor(), r.order.c_str());
  }
  const double v = o.median().factor();
  std::fprintf(out, "   comm_overlap %.3f (median round)  target <= %.2f  %s\n", v,
               kCommOverlapTarget, v <= kCommOverlapTarget ? "met" : "MISSED");
  std::fprintf(out, "   step:         %s\n   comm-only:    %s\n   compute-only: %s (%d at once)\n",
               o.step_command.c_str(), o.comm_only_command.c_str(), o.compute_only_command.c_str(),
               kRanks);
}

}  // namespace

void AddShardReport(const Flags& f, const ShardResult* shard, const OverlapResult* overlap,
                    nlohmann::ordered_json& out) {
  if (shard == nullptr && overlap == nullptr) return;
  if (shard != nullptr) AddShard(*shard, out);
  if (overlap != nullptr) AddOverlap(*overlap, out);
  AddRunConfig("shard", f, f.host_mem, out);  // every run of 3 and 4
}

void PrintShardTable(const Flags& f, const ShardResult* shard, const OverlapResult* overlap,
                     std::FILE* stream) {
  if (shard != nullptr) PrintShard(f, *shard, stream);
  if (overlap != nullptr) PrintOverlap(f, *overlap, stream);
  std::fflush(stream);
}

}  // namespace strata::bench::parallel_bench
