// `strata bench offload`, measurement 4: the host pool's eviction. NVMe bytes (read + write) per
// step of the same run under Belady over the plan the Engine learns (Note [Host access plan] in
// scheduler/host_pages.h) and under LRU steered by demote, in the cost configuration (run 2's
// offload) and in the demo's (tools/demo.sh). The plan is learned from step 2 and set before
// step 4, so the first kEvictionWarmupSteps steps are not counted.
#include <string>

#include "bench/bench_offload.h"

namespace strata::bench::offload {
namespace {

constexpr int kEvictionWarmupSteps = 3;

// Mean NVMe bytes per step after the warmup, under `policy`.
Result<double> NvmeBytesPerStep(TrainOptions o, const char* policy, int steps,
                                const std::string& nvme_parent, const char* what) {
  STRATA_ASSIGN_OR_RETURN(auto dir, BenchDir::Create(nvme_parent, "eviction", "--nvme-dir"));
  o.budgets.nvme_dirs = {dir->path()};
  o.budgets.host_eviction = policy;
  o.steps = kEvictionWarmupSteps + steps;
  o.checkpoints.every = 0;
  STRATA_ASSIGN_OR_RETURN(
      const RunSummary run,
      RunTrainer(o, kEvictionWarmupSteps, (std::string(what) + " " + policy).c_str()));
  double bytes = 0;
  int counted = 0;
  for (const StepStats& s : run.steps) {
    if (s.step <= kEvictionWarmupSteps) continue;
    bytes += double(s.moved_bytes.nvme_read + s.moved_bytes.nvme_write);
    ++counted;
  }
  return counted > 0 ? bytes / counted : 0.0;
}

Result<EvictionRun> Compare(const TrainOptions& o, int steps, const std::string& nvme_parent,
                            const char* what) {
  EvictionRun r;
  r.steps = steps;
  STRATA_ASSIGN_OR_RETURN(r.belady_bytes, NvmeBytesPerStep(o, "belady", steps, nvme_parent, what));
  STRATA_ASSIGN_OR_RETURN(r.lru_bytes, NvmeBytesPerStep(o, "lru", steps, nvme_parent, what));
  return r;
}

// tools/demo.sh's run: the `small` GPT, batch 8 in micro-batches of 4, 128 MiB of device memory,
// a 64 MiB host pool, 1 MiB pages.
TrainOptions DemoOptions(const TrainOptions& base) {
  TrainOptions o;
  o.model.preset = "small";
  o.model.preset_given = true;
  o.data.batch = 8;
  o.data.micro_batch = 4;
  o.optimizer.lr = 1e-3f;
  o.optimizer.warmup = 10;
  o.threads = base.threads;
  o.budgets.engine = "paged";
  o.budgets.paging_flag_given = true;
  o.budgets.gpu_mem = 128ull << 20;
  o.budgets.host_mem = 64ull << 20;
  o.budgets.page_bytes = 1ull << 20;
  o.budgets.recompute = "auto";
  return o;
}

}  // namespace

Result<EvictionResult> MeasureEviction(const Flags& f, const TrainOptions& base,
                                       const TrainOptions& cost_offload,
                                       const std::string& nvme_parent) {
  EvictionResult r;
  STRATA_ASSIGN_OR_RETURN(r.cost, Compare(cost_offload, f.eviction_steps, nvme_parent, "cost"));
  if (f.eviction_demo) {
    STRATA_ASSIGN_OR_RETURN(r.demo,
                            Compare(DemoOptions(base), f.eviction_steps, nvme_parent, "demo"));
  }
  return r;
}

}  // namespace strata::bench::offload
