// `strata bench offload` in parts (internal to bench/; see bench/bench_offload.cc for what it
// measures and why): its flags, running one trainer configuration and summarising its steps
// (bench_offload_run.cc), the first three measurements (bench_offload_measure.cc), the fourth
// (bench_offload_eviction.cc) and the fifth (bench_offload_amplification*.cc,
// bench_offload_nvme_floor.cc).
// bench/bench_offload.cc is the command and its JSON report.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "bench/bench_dir.h"
#include "core/nn/model.h"
#include "core/util/status.h"
#include "memory/tier.h"
#include "scheduler/trainer_factory.h"

namespace CLI {
class App;
}  // namespace CLI

namespace strata::bench::offload {

inline constexpr double kOverlapMaxFactor = 1.15;
inline constexpr double kCostTarget = 0.8;
inline constexpr double kBackwardShare = 2.0 / 3.0;  // Note [Overlap configuration]
inline constexpr double kAmplificationTarget = 1.3;  // NVMe bytes per step / the floor, at most
inline constexpr double kScaleVsMemoryTarget = 0.7;  // paged / in-memory tokens/s, at least

struct Flags {
  std::string model = "small";
  int batch = 8;
  int seq = 128;
  int steps = 5;  // timed steps of runs 1 and 2: the median is reported (5 damp the noise)
  int warmup_steps = 1;
  int threads = 1;           // Note [Device and host cores]
  int overlap_layers = 12;   // Note [Overlap configuration]
  int overlap_rounds = 3;    // Note [Overlap rounds]
  double sim_link_gbps = 0;  // 0: calibrated (see the header)
  // sim, or cuda: every run on the GPU, over the real PCIe link (nothing calibrated; the
  // reported link rate is the one the movement-only run achieved).
  std::string device = "sim";
  std::string nvme_dir;
  int scale_layers = 32, scale_embd = 192, scale_heads = 6, scale_batch = 2, scale_seq = 64;
  int scale_steps = 3;
  int eviction_steps = 4;     // run 4: steps counted per policy, after the plan is set
  bool eviction_demo = true;  // run 4 also in the demo's configuration (tools/demo.sh)
  // Run 2's model: wide and shallow with few tokens per step, so that its states, not its
  // activations, dominate (the regime offloading is for; see the header).
  int cost_layers = 8, cost_embd = 768, cost_heads = 12, cost_batch = 4, cost_seq = 64;
  int cost_rounds = 3;  // rounds of the shared-cores pair: the median ratio is reported
  // Run 5 (Note [Amplification configuration] in bench/bench_offload_amplification.cc): the
  // 80-layer model at 71x its device and 18x its host budget, paged and in memory.
  int amp_layers = 80, amp_embd = 192, amp_heads = 6, amp_batch = 8, amp_micro_batch = 1;
  int amp_seq = 64;
  // Run 5's family: gpt2 (the preset small's) or llama (llama-small's, with amp_kv_heads key/value
  // heads and an MLP of amp_ffn, 0: 8/3 of the width rounded up to 64 as LLaMA's rule).
  std::string amp_arch = "gpt2";
  int amp_kv_heads = 2, amp_ffn = 0;
  std::string amp_gpu_mem = "14297472", amp_host_mem = "56623104";  // bytes, or with a suffix
  int amp_warmup_steps = 3;  // the host plan is in force from step 4 (Note [Host access plan])
  int amp_steps = 2;         // counted steps per run
  int amp_rounds = 3;        // rounds of (in memory, paged): the median ratio is reported
  std::string page_size;     // empty: 1 MiB
  bool fio = true;
  bool json = false;
  // Which measurements run (1 to 5, comma-separated; 4 needs 2's configuration): the JSON holds
  // only their fields.
  std::string runs = "1,2,3,4,5";
  bool run(int n) const;
  std::string log_level = "warn";
};

// --runs: its option, and its check (measurement numbers 1 to 5; 4 with 2).
void AddRunsOption(CLI::App* cmd, Flags& f);
Status CheckRuns(const Flags& f);

// One trainer run, its steps and their medians.
struct RunSummary {
  std::vector<StepStats> steps;  // every step, warmup included
  double median_step_s = 0;
  double median_tokens_per_s = 0;
  double median_cpu_s = 0;  // process CPU (user + system) per step: Note [CPU bound]
  StepStats::Moved moved;   // the last step's
  double overlap = 0;       // the last step's
  int recompute_layers = 0;
  ModelShape shape;
  std::shared_ptr<const Model> model;  // what the run trained (its layout sizes the budgets)
  int seq = 0;
};

// Trains `o`, logging each step on stderr as `what`; the medians skip the first `warmup` steps.
Result<RunSummary> RunTrainer(const TrainOptions& o, int warmup, const char* what);

// A deep narrow model's shape and batch over `base` (its --model preset and --threads): the
// scale run's and the amplification run's (block size = seq).
struct ModelShape {
  int layers = 0, embd = 0, heads = 0, seq = 0, batch = 0;
};
TrainOptions WithShape(const TrainOptions& base, const ModelShape& shape);

// Makes `o` a paged run with these budgets, the rest of its state on NVMe in `nvme`, and
// --recompute auto.
void PageUnderBudgets(TrainOptions& o, uint64_t page, uint64_t gpu_mem, uint64_t host_mem,
                      const BenchDir& nvme);

// The index of the median of `values` (the upper one of an even count): the round a benchmark
// that runs in rounds reports. `values` must not be empty.
size_t MedianIndex(const std::vector<double>& values);

inline uint64_t RoundUp4K(uint64_t v) { return (v + 4095) / 4096 * 4096; }
inline uint64_t RoundDownPage(uint64_t v, uint64_t page) { return v / page * page; }

// Model state bytes of `layout`: params, grads and the two AdamW moments.
inline uint64_t StateBytes(const ModelLayout& layout) {
  return uint64_t(layout.total_numel) * 4 * 4;
}

// fio's sequential 1 MiB O_DIRECT read rate (bytes/s) on `dir`; < 0 when fio is unavailable.
double FioReadBytesPerS(const std::string& dir);

// 1. Overlap: one round is the compute-only step measured just before, the paged run and its
// --movement-only run, one after the other (Note [Overlap rounds]).
struct OverlapRound {
  double compute_s = 0;
  RunSummary step, movement;
  double factor() const;  // step / max(compute-only, movement-only)
};

struct OverlapMeasure {
  double link_gbps = 0;
  uint64_t gpu_mem = 0;  // the budget in force (the plan's default when none was given)
  std::vector<OverlapRound> rounds;
  // The round whose factor is the median (the upper one of an even count).
  const OverlapRound& median() const;
  std::vector<double> factors() const;
};

struct OverlapResult {
  RunSummary in_memory;     // the first compute-only run (its model and seq)
  OverlapMeasure resident;  // parameters on the device, no clipping
  OverlapMeasure clipped;   // parameters streamed from the host, clipping
};
Result<OverlapResult> MeasureOverlap(const Flags& f, const TrainOptions& base, uint64_t page);

// 2. Cost of offload: 25% device, 50% host, the rest on NVMe, vs the same model in memory, with
// the kernels on one core and on every core (Note [Device and host cores]).
struct CostResult {
  RunSummary in_memory, offload;
  // The shared-cores pair of the round with the median ratio, and every round's ratio.
  RunSummary shared_in_memory, shared_offload;
  std::vector<double> shared_ratios;
  // One more shared-cores pair without clipping (--grad-clip 0), so that every update may run
  // during backward: how much of the shared-cores gap the wait for the norm explains.
  RunSummary shared_no_clip_in_memory, shared_no_clip_offload;
  TrainOptions offload_options;  // the budgets and micro-batch in force
  bool budget_raised = false;    // 25% was below the minimal working set
};
Result<CostResult> MeasureCost(const Flags& f, const TrainOptions& base, uint64_t page,
                               const std::string& nvme_parent);

// 3. Scale: a deep narrow model, host 1/4 and device 1/16 of its states; fio beside it.
struct ScaleResult {
  TrainOptions options;  // the budgets in force
  std::shared_ptr<const Model> model;
  RunSummary run;
  double fio_read_bytes_per_s = -1;  // < 0: not measured
};
Result<ScaleResult> MeasureScale(const Flags& f, const TrainOptions& base, uint64_t page,
                                 const std::string& nvme_parent);

// 4. The host pool's eviction: NVMe bytes per step under Belady (the learned plan) and LRU, in
// the cost configuration and in the demo's (bench/bench_offload_eviction.cc).
struct EvictionRun {
  double belady_bytes = 0, lru_bytes = 0;  // NVMe read + write per step
  int steps = 0;                           // counted per policy; 0: not measured
};
struct EvictionResult {
  EvictionRun cost, demo;
};
Result<EvictionResult> MeasureEviction(const Flags& f, const TrainOptions& base,
                                       const TrainOptions& cost_offload,
                                       const std::string& nvme_parent);

// 5. NVMe amplification and scale vs memory (bench/bench_offload_amplification.cc): the deep
// model far beyond both budgets, its NVMe bytes per step against the minimum its page plan
// allows, and its paged tokens/s against the in-memory trainer's, in rounds.

// The least NVMe traffic a step of a paged run can have, from its page plan and placement
// (Note [NVMe floor] in bench/bench_offload_nvme_floor.cc).
struct NvmeFloor {
  uint64_t read_bytes = 0, write_bytes = 0;  // per step
  uint64_t param_pages = 0, moment_pages = 0, page_bytes = 0;
  uint64_t state_bytes = 0;  // every page of the plan (params, grads, moments), padding included
  memory::Tier params = memory::Tier::kHost, optimizer = memory::Tier::kHost;
  bool params_host_pinned = false;
};
// InvalidArgument/ResourceExhausted as the paged trainer's own plan would refuse `o`.
Result<NvmeFloor> ComputeNvmeFloor(const TrainOptions& o);

struct AmpRound {
  RunSummary in_memory, paged;
  double read_bytes_per_step = 0, write_bytes_per_step = 0;  // paged, mean of counted steps
  bool losses_equal = false;  // every step's loss, paged vs in memory (bit for bit)
  double ratio() const;       // paged / in-memory median tokens/s
};

struct AmpResult {
  TrainOptions paged_options;  // the budgets in force
  std::shared_ptr<const Model> model;
  NvmeFloor floor;
  std::vector<AmpRound> rounds;
  const AmpRound& median() const;  // the round with the median ratio (the upper of an even count)
  double read_bytes_per_step() const;  // mean over every round's counted steps
  double write_bytes_per_step() const;
};
Result<AmpResult> MeasureAmplification(const Flags& f, const TrainOptions& base, uint64_t page,
                                       const std::string& nvme_parent);
// Run 5's flags and its JSON fields (bench/bench_offload_amplification_report.cc).
Status CheckAmplificationFlags(const Flags& f);
void AddAmplificationOptions(CLI::App* cmd, Flags& f);
void AddAmplification(const AmpResult& r, const Flags& f, nlohmann::ordered_json& out);

}  // namespace strata::bench::offload
