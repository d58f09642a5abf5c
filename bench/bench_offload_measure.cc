// `strata bench offload`'s first three measurements (bench/bench_offload.h; what each measures
// and why: the header of bench/bench_offload.cc).
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_offload.h"
#include "core/util/check.h"
#include "core/util/sizes.h"
#include "scheduler/activations.h"
#include "scheduler/memory_plan.h"
#include "scheduler/model_registry.h"
#include "scheduler/slot_sizes.h"

namespace strata::bench::offload {
namespace {

// The sim link rate (GB/s) at which max(h2d, d2h) bytes per step of the paged run `o` take
// `link_s` (one unthrottled run gives the bytes); --sim-link-gbps overrides.
Result<double> CalibrateLink(TrainOptions o, double link_s, const Flags& f,
                             const std::string& what) {
  if (f.sim_link_gbps > 0) return f.sim_link_gbps;
  if (o.device == "cuda") return 0.0;  // the real link: nothing to model (0 = unthrottled)
  o.steps = 2;
  STRATA_ASSIGN_OR_RETURN(RunSummary c, RunTrainer(o, 1, (what + " calibration").c_str()));
  return double(std::max(c.moved.h2d, c.moved.d2h)) / link_s / 1e9;
}

// Appends a round to `m`: the paged run `o` at m->link_gbps, then the same with --movement-only.
Status MeasureRound(TrainOptions o, double compute_s, const Flags& f, const std::string& what,
                    OverlapMeasure* m) {
  OverlapRound r;
  r.compute_s = compute_s;
  o.sim_link_gbps = m->link_gbps;
  STRATA_ASSIGN_OR_RETURN(r.step, RunTrainer(o, f.warmup_steps, what.c_str()));
  o.movement_only = true;
  STRATA_ASSIGN_OR_RETURN(r.movement,
                          RunTrainer(o, f.warmup_steps, (what + " movement-only").c_str()));
  // Without --gpu-mem the plan allocates every useful slot: its peak is the budget in force.
  m->gpu_mem = o.budgets.gpu_mem > 0 ? o.budgets.gpu_mem : r.step.steps.back().device_peak_bytes;
  m->rounds.push_back(std::move(r));
  return Status::Ok();
}

// Beside the resident configuration `ov`: parameters streamed from the host through the minimal
// slots (or half the blocks), with clipping, every activation kept.
TrainOptions ClippedConfig(const TrainOptions& ov, const Flags& f, const RunSummary& in_memory) {
  TrainOptions clipped = ov;
  clipped.budgets.params_on = "host";
  clipped.optimizer.grad_clip = 1.0f;
  const Model& model = *in_memory.model;
  const ModelLayout& layout = model.layout();
  int64_t largest = 0;
  for (const BlockSpec& b : layout.blocks) largest = std::max(largest, b.numel);
  const uint64_t slot_bytes = RoundUp4K(uint64_t(largest) * 4);
  const int slots =
      std::max(scheduler::kMinWorkingSlots + scheduler::kPrefetchSlots, layout.num_blocks() / 2);
  const scheduler::ActivationLayout acts =
      scheduler::MakeActivationLayout(model, f.batch, in_memory.seq, 0);
  clipped.budgets.gpu_mem = RoundUp4K(acts.bytes()) +
                            RoundUp4K(uint64_t(2) * f.batch * in_memory.seq * 4) +
                            slots * slot_bytes;
  return clipped;
}

// The largest micro-batch of `off` whose minimal working set (every block recomputed) fits
// off.gpu_mem; when none does, the budget is raised to micro-batch 1's minimum (returns true).
Result<bool> FitMicroBatch(TrainOptions& off, const Model& model, int seq) {
  scheduler::MemoryPlanInput in;
  in.model = &model;
  in.layout = &model.layout();
  in.batch = off.data.batch;
  in.seq = seq;
  in.recompute = "all";
  uint64_t need = 0;
  for (int mb = off.data.batch; mb >= 1; --mb) {
    if (off.data.batch % mb != 0) continue;
    off.data.micro_batch = mb;
    in.micro_rows = mb;
    STRATA_ASSIGN_OR_RETURN(need, scheduler::MinimalDeviceBytes(in));
    if (need <= off.budgets.gpu_mem) return false;
  }
  std::fprintf(stderr,
               "bench offload: 25%% of the states (%s) is below the minimal device "
               "working set (%s); using the minimum\n",
               FormatBytes(off.budgets.gpu_mem).c_str(), FormatBytes(need).c_str());
  off.budgets.gpu_mem = need;
  return true;
}

// The cost configuration's in-memory run `mem`, then its paged run `off` on a new NVMe directory,
// back to back (the shared-cores pair of Note [Device and host cores]).
Result<std::pair<RunSummary, RunSummary>> SharedCoresPair(const TrainOptions& mem, TrainOptions off,
                                                          const Flags& f,
                                                          const std::string& nvme_parent,
                                                          const std::string& what) {
  std::pair<RunSummary, RunSummary> pair;
  STRATA_ASSIGN_OR_RETURN(
      pair.first, RunTrainer(mem, f.warmup_steps, ("cost in-memory, shared cores" + what).c_str()));
  STRATA_ASSIGN_OR_RETURN(auto dir, BenchDir::Create(nvme_parent, "cost-shared", "--nvme-dir"));
  off.budgets.nvme_dirs = {dir->path()};
  STRATA_ASSIGN_OR_RETURN(
      pair.second, RunTrainer(off, f.warmup_steps, ("offload, shared cores" + what).c_str()));
  return pair;
}

}  // namespace

double OverlapRound::factor() const {
  return step.median_step_s / std::max(compute_s, movement.median_step_s);
}

size_t MedianIndex(const std::vector<double>& values) {
  STRATA_CHECK(!values.empty());
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  return order[order.size() / 2];
}

const OverlapRound& OverlapMeasure::median() const { return rounds[MedianIndex(factors())]; }

std::vector<double> OverlapMeasure::factors() const {
  std::vector<double> v;
  for (const OverlapRound& r : rounds) v.push_back(r.factor());
  return v;
}

Result<OverlapResult> MeasureOverlap(const Flags& f, const TrainOptions& base, uint64_t page) {
  // Compute-only: the in-memory trainer (Note [Overlap configuration]).
  TrainOptions mem = base;
  mem.model.n_layer = f.overlap_layers;
  mem.budgets.engine = "memory";
  mem.optimizer.grad_clip = 0;
  OverlapResult r;
  STRATA_ASSIGN_OR_RETURN(r.in_memory, RunTrainer(mem, f.warmup_steps, "in-memory"));
  const double compute_s = r.in_memory.median_step_s;
  // Parameters resident on the device (every slot the plan finds useful), moments on the host.
  TrainOptions ov = mem;
  ov.budgets.engine = "paged";
  ov.budgets.paging_flag_given = true;
  ov.budgets.params_on = "device";
  ov.budgets.optimizer_on = "host";
  ov.budgets.page_bytes = page;
  const TrainOptions clipped = ClippedConfig(ov, f, r.in_memory);
  STRATA_ASSIGN_OR_RETURN(r.resident.link_gbps,
                          CalibrateLink(ov, compute_s * kBackwardShare, f, "overlap"));
  STRATA_ASSIGN_OR_RETURN(r.clipped.link_gbps,
                          CalibrateLink(clipped, compute_s, f, "overlap clipped"));
  for (int round = 0; round < f.overlap_rounds; ++round) {
    double round_compute_s = compute_s;
    if (round > 0) {
      STRATA_ASSIGN_OR_RETURN(RunSummary again, RunTrainer(mem, f.warmup_steps, "in-memory"));
      round_compute_s = again.median_step_s;
    }
    STRATA_RETURN_IF_ERROR(MeasureRound(ov, round_compute_s, f, "overlap", &r.resident));
    STRATA_RETURN_IF_ERROR(
        MeasureRound(clipped, round_compute_s, f, "overlap clipped", &r.clipped));
  }
  return r;
}

Result<CostResult> MeasureCost(const Flags& f, const TrainOptions& base, uint64_t page,
                               const std::string& nvme_parent) {
  TrainOptions cost_mem = base;
  cost_mem.model.n_layer = f.cost_layers;
  cost_mem.model.n_embd = f.cost_embd;
  cost_mem.model.n_head = f.cost_heads;
  cost_mem.data.batch = f.cost_batch;
  cost_mem.data.seq = f.cost_seq;
  cost_mem.budgets.engine = "memory";
  CostResult r;
  STRATA_ASSIGN_OR_RETURN(r.in_memory, RunTrainer(cost_mem, f.warmup_steps, "cost in-memory"));
  const uint64_t state = StateBytes(r.in_memory.model->layout());
  TrainOptions off = cost_mem;
  STRATA_ASSIGN_OR_RETURN(auto off_dir, BenchDir::Create(nvme_parent, "cost", "--nvme-dir"));
  PageUnderBudgets(off, page, state / 4, RoundDownPage(state / 2, page), *off_dir);
  STRATA_ASSIGN_OR_RETURN(r.budget_raised, FitMicroBatch(off, *r.in_memory.model, r.in_memory.seq));
  STRATA_ASSIGN_OR_RETURN(r.offload, RunTrainer(off, f.warmup_steps, "offload"));
  off_dir.reset();
  r.offload_options = off;
  // The same pair with the kernels on every core (Note [Device and host cores]), in rounds: one
  // pair alone gave 0.565 in one run and 0.70 in another on the same day.
  TrainOptions shared_mem = cost_mem, shared_off = off;
  shared_mem.threads = shared_off.threads = 0;
  std::vector<std::pair<RunSummary, RunSummary>> rounds;
  for (int round = 0; round < f.cost_rounds; ++round) {
    STRATA_ASSIGN_OR_RETURN(auto pair, SharedCoresPair(shared_mem, shared_off, f, nvme_parent, ""));
    r.shared_ratios.push_back(pair.second.median_tokens_per_s / pair.first.median_tokens_per_s);
    rounds.push_back(std::move(pair));
  }
  const size_t median = MedianIndex(r.shared_ratios);
  r.shared_in_memory = rounds[median].first;
  r.shared_offload = rounds[median].second;
  shared_mem.optimizer.grad_clip = shared_off.optimizer.grad_clip = 0;
  STRATA_ASSIGN_OR_RETURN(auto no_clip,
                          SharedCoresPair(shared_mem, shared_off, f, nvme_parent, ", no clipping"));
  r.shared_no_clip_in_memory = std::move(no_clip.first);
  r.shared_no_clip_offload = std::move(no_clip.second);
  return r;
}

Result<ScaleResult> MeasureScale(const Flags& f, const TrainOptions& base, uint64_t page,
                                 const std::string& nvme_parent) {
  ScaleResult r;
  TrainOptions& sc = r.options;
  sc = WithShape(base, {f.scale_layers, f.scale_embd, f.scale_heads, f.scale_seq, f.scale_batch});
  sc.steps = f.scale_steps;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, ResolveModel(sc.model));
  r.model = std::move(model);
  const uint64_t state = StateBytes(r.model->layout());
  STRATA_ASSIGN_OR_RETURN(auto sc_dir, BenchDir::Create(nvme_parent, "scale", "--nvme-dir"));
  PageUnderBudgets(sc, page, state / 16, RoundDownPage(state / 4, page), *sc_dir);
  sc.data.micro_batch = 1;
  STRATA_ASSIGN_OR_RETURN(r.run, RunTrainer(sc, 0, "scale"));
  sc_dir.reset();
  if (f.fio) {
    STRATA_ASSIGN_OR_RETURN(auto fio_dir, BenchDir::Create(nvme_parent, "fio", "--nvme-dir"));
    r.fio_read_bytes_per_s = FioReadBytesPerS(fio_dir->path());
  }
  return r;
}

}  // namespace strata::bench::offload
