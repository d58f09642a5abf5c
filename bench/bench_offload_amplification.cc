// `strata bench offload`, measurement 5: the deep model far beyond both budgets: its NVMe bytes
// per step against the floor its page plan allows (Note [NVMe floor] in
// bench/bench_offload_nvme_floor.cc), and its paged tokens/s against the in-memory trainer's.
//
// Note [Amplification configuration]
// The 80-layer `small` (192 wide, 6 heads, context 64), batch 8 in micro-batches of 1, seq 64,
// 1 MiB pages, --gpu-mem 13.6 MiB, --host-mem 54 MiB, --recompute auto, clipping at 1.0 (the
// default): 968 MiB of state in pages, 71x the device budget and 18x the host budget, so the
// parameters and the moments both live on NVMe and stream through the host pool into the few
// device slots. The defaults of the --amp-* flags are this configuration.
// Each round runs the in-memory trainer (the same model, batch and micro-batch, every byte
// resident) and then the paged run, back to back, because the machine's speed drifts within
// minutes (Note [Overlap rounds] in bench/bench_offload.cc); both with the sim device on
// --threads compute threads and the host work on the other cores (Note [Device and host
// cores]). The paged run counts its steps after --amp-warmup-steps: the Engine records its host
// plan in step 2 and sets it before step 4 (Note [Host access plan] in scheduler/host_pages.h),
// so from step 4 on a step is the steady state. The in-memory run has nothing to learn: its
// first step (allocation, first touch) is its only warmup.
// Reported: nvme_{read,write}_amplification = the mean NVMe bytes per counted step over every
// round / the floor; scale_vs_memory = the median round's paged / in-memory tokens/s (each the
// median of its counted steps), and every round's figures beside them.
#include <algorithm>
#include <string>
#include <vector>

#include "bench/bench_offload.h"
#include "core/util/sizes.h"
#include "scheduler/model_registry.h"

namespace strata::bench::offload {
namespace {

constexpr int kInMemoryWarmupSteps = 1;

// Run 5's model, batch and steps over `base` (its --model preset and --threads).
TrainOptions ModelOptions(const Flags& f, const TrainOptions& base) {
  TrainOptions o =
      WithShape(base, {f.amp_layers, f.amp_embd, f.amp_heads, f.amp_seq, f.amp_batch});
  o.data.micro_batch = f.amp_micro_batch;
  if (f.amp_arch == "llama") {  // the same depth, width and heads in LLaMA's blocks
    o.model.arch = "llama";
    o.model.preset = "llama-small";
    o.model.n_kv_head = f.amp_kv_heads;
    o.model.ffn_dim = f.amp_ffn > 0 ? f.amp_ffn : (8 * f.amp_embd / 3 + 63) / 64 * 64;
  }
  return o;
}

// The paged run: run 5's budgets, 1 MiB (--page-size) pages, --recompute auto; its NVMe
// directory is set per round.
Result<TrainOptions> PagedOptions(const Flags& f, const TrainOptions& base, uint64_t page) {
  TrainOptions o = ModelOptions(f, base);
  o.budgets.engine = "paged";
  o.budgets.paging_flag_given = true;
  o.budgets.page_bytes = page;
  STRATA_ASSIGN_OR_RETURN(o.budgets.gpu_mem, ParseBytes(f.amp_gpu_mem, "--amp-gpu-mem"));
  STRATA_ASSIGN_OR_RETURN(o.budgets.host_mem, ParseBytes(f.amp_host_mem, "--amp-host-mem"));
  o.budgets.recompute = "auto";
  o.steps = f.amp_warmup_steps + f.amp_steps;
  return o;
}

// Mean NVMe bytes of the paged run's counted steps, and whether its losses equal the in-memory
// run's over the steps both ran.
void Summarise(const Flags& f, AmpRound* r) {
  double read = 0, write = 0;
  int counted = 0;
  for (const StepStats& s : r->paged.steps) {
    if (s.step <= f.amp_warmup_steps) continue;
    read += double(s.moved_bytes.nvme_read);
    write += double(s.moved_bytes.nvme_write);
    ++counted;
  }
  r->read_bytes_per_step = counted > 0 ? read / counted : 0;
  r->write_bytes_per_step = counted > 0 ? write / counted : 0;
  const size_t n = std::min(r->paged.steps.size(), r->in_memory.steps.size());
  r->losses_equal = n > 0;
  for (size_t i = 0; i < n; ++i) {
    if (r->paged.steps[i].loss != r->in_memory.steps[i].loss) r->losses_equal = false;
  }
}

Result<AmpRound> RunRound(const Flags& f, const TrainOptions& base, TrainOptions paged,
                          const std::string& nvme_parent, int round) {
  AmpRound r;
  const std::string tag = " round " + std::to_string(round + 1);
  TrainOptions mem = ModelOptions(f, base);
  mem.budgets.engine = "memory";
  mem.steps = kInMemoryWarmupSteps + f.amp_steps;
  STRATA_ASSIGN_OR_RETURN(r.in_memory,
                          RunTrainer(mem, kInMemoryWarmupSteps, ("amp in-memory" + tag).c_str()));
  STRATA_ASSIGN_OR_RETURN(auto dir, BenchDir::Create(nvme_parent, "amp", "--nvme-dir"));
  paged.budgets.nvme_dirs = {dir->path()};
  STRATA_ASSIGN_OR_RETURN(r.paged,
                          RunTrainer(paged, f.amp_warmup_steps, ("amp paged" + tag).c_str()));
  Summarise(f, &r);
  return r;
}

}  // namespace

double AmpRound::ratio() const {
  return in_memory.median_tokens_per_s > 0
             ? paged.median_tokens_per_s / in_memory.median_tokens_per_s
             : 0.0;
}

const AmpRound& AmpResult::median() const {
  std::vector<double> ratios;
  for (const AmpRound& r : rounds) ratios.push_back(r.ratio());
  return rounds[MedianIndex(ratios)];
}

double AmpResult::read_bytes_per_step() const {
  double sum = 0;
  for (const AmpRound& r : rounds) sum += r.read_bytes_per_step;
  return rounds.empty() ? 0 : sum / rounds.size();
}

double AmpResult::write_bytes_per_step() const {
  double sum = 0;
  for (const AmpRound& r : rounds) sum += r.write_bytes_per_step;
  return rounds.empty() ? 0 : sum / rounds.size();
}

Result<AmpResult> MeasureAmplification(const Flags& f, const TrainOptions& base, uint64_t page,
                                       const std::string& nvme_parent) {
  AmpResult r;
  STRATA_ASSIGN_OR_RETURN(r.paged_options, PagedOptions(f, base, page));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, ResolveModel(r.paged_options.model));
  r.model = std::move(model);
  // The floor's plan needs to know NVMe is there; the directory itself is each round's.
  TrainOptions with_nvme = r.paged_options;
  with_nvme.budgets.nvme_dirs = {nvme_parent};
  STRATA_ASSIGN_OR_RETURN(r.floor, ComputeNvmeFloor(with_nvme));
  for (int round = 0; round < f.amp_rounds; ++round) {
    STRATA_ASSIGN_OR_RETURN(AmpRound one, RunRound(f, base, r.paged_options, nvme_parent, round));
    r.rounds.push_back(std::move(one));
  }
  return r;
}

}  // namespace strata::bench::offload
