// `strata train`: parses flags into TrainOptions, runs the Trainer, prints progress on stderr
// and one JSON object per step to --log-json.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "core/util/log.h"
#include "core/util/sizes.h"
#include "scheduler/checkpoint.h"
#include "scheduler/option_ranges.h"
#include "scheduler/trainer.h"
#include "tools/command.h"
#include "tools/output_paths.h"
#include "tools/step_log.h"
#include "tools/stop_signals.h"
#include "tools/train_ranks.h"
#include "tools/fault_spec.h"

namespace strata::tools {
namespace {

struct TrainFlags {
  TrainOptions o;
  std::string gpu_mem, host_mem, nvme_mem, page_size;
  int n_layer = 0, n_head = 0, n_embd = 0, vocab = 0, block_size = 0;
  std::string log_json;
  std::string log_level = "info";
  InjectedFaults faults;  // hidden --inject-faults (tools/fault_spec.h)
};

// Moves what CLI11 parsed into strings and optionals into the TrainOptions.
Status ApplyFlags(TrainFlags& f, const CLI::App& cmd) {
  TrainOptions& o = f.o;
  o.model.preset_given = cmd.count("--model") > 0;
  if (cmd.count("--n-layer")) o.model.n_layer = f.n_layer;
  if (cmd.count("--n-head")) o.model.n_head = f.n_head;
  if (cmd.count("--n-embd")) o.model.n_embd = f.n_embd;
  if (cmd.count("--vocab")) o.model.vocab_size = f.vocab;
  if (cmd.count("--block-size")) o.model.block_size = f.block_size;
  if (!f.gpu_mem.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.gpu_mem, ParseBytes(f.gpu_mem, "--gpu-mem"));
  }
  if (!f.host_mem.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.host_mem, ParseBytes(f.host_mem, "--host-mem"));
  }
  if (!f.nvme_mem.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.nvme_mem, ParseBytes(f.nvme_mem, "--nvme-mem"));
  }
  if (!f.page_size.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.page_bytes, ParseBytes(f.page_size, "--page-size"));
  }
  if (cmd.count("--resume-from") > 0) o.resume = true;
  for (const char* flag : kPagingFlags) {
    if (cmd.count(flag) > 0) o.paging_flag_given = true;
  }
  STRATA_RETURN_IF_ERROR(f.faults.arm(&o));
  // Every number, with its flag; a sentinel ("0: the default") given explicitly is refused.
  return CheckOptionRanges(
      o, [&](std::string_view flag) { return cmd.count(std::string(flag)) > 0; });
}

Status CheckLogLevel(const std::string& level) {
  for (const char* known : {"debug", "info", "warn", "error", "off"}) {
    if (level == known) return Status::Ok();
  }
  return Status::InvalidArgument("--log-level must be debug, info, warn, error or off, got '" +
                                 level + "'");
}

// A step's progress on stderr: one line, two for the paged engine.
void PrintStep(const StepStats& s, long steps) {
  std::fprintf(stderr,
               "step %5ld/%ld | loss %.4f | lr %.2e | norm %.3f%s | %.0f tok/s | %.0f ms | "
               "device peak %s\n",
               s.step, steps, s.loss, s.lr, s.grad_norm, s.clipped ? " (clipped)" : "",
               s.tokens_per_s, s.step_s * 1e3, FormatBytes(s.device_peak_bytes).c_str());
  if (s.paged) {
    std::fprintf(stderr,
                 "           moved h2d %s d2h %s nvme read %s write %s | overlap %.0f%% | "
                 "peak host %s nvme %s\n",
                 FormatBytes(s.moved_bytes.h2d).c_str(), FormatBytes(s.moved_bytes.d2h).c_str(),
                 FormatBytes(s.moved_bytes.nvme_read).c_str(),
                 FormatBytes(s.moved_bytes.nvme_write).c_str(), s.overlap * 100,
                 FormatBytes(s.host_peak_bytes).c_str(), FormatBytes(s.nvme_peak_bytes).c_str());
  }
}

// The closing summary: what a whole run did (the first step, which warms up, is left out of
// the rate when there are more).
class RunSummary {
 public:
  explicit RunSummary(long steps) : steps_(steps) {}

  void add(const StepStats& s) {
    if (steps_run_++ == 0) first_loss_ = s.loss;
    last_loss_ = s.loss;
    last_elapsed_s_ = s.elapsed_s;
    if (steps_run_ > 1 || steps_ == 1) {
      timed_s_ += s.step_s;
      timed_tokens_ += s.tokens_per_s * s.step_s;
    }
    paged_ = s.paged;
    moved_sum_.h2d += s.moved_bytes.h2d;
    moved_sum_.d2h += s.moved_bytes.d2h;
    moved_sum_.nvme_read += s.moved_bytes.nvme_read;
    moved_sum_.nvme_write += s.moved_bytes.nvme_write;
    peak_device_ = std::max(peak_device_, s.device_peak_bytes);
    peak_host_ = std::max(peak_host_, s.host_peak_bytes);
    peak_nvme_ = std::max(peak_nvme_, s.nvme_peak_bytes);
  }

  // The `done:` line (and the paged engine's second line); nothing when no step ran.
  void print() const {
    if (steps_run_ == 0) return;
    const auto per_step = [&](uint64_t total) { return FormatBytes(total / uint64_t(steps_run_)); };
    std::fprintf(stderr, "done: %ld steps in %.1f s | %.0f tok/s%s | loss %.4f -> %.4f\n",
                 steps_run_, last_elapsed_s_, timed_s_ > 0 ? timed_tokens_ / timed_s_ : 0.0,
                 steps_run_ > 1 ? " after step 1" : "", first_loss_, last_loss_);
    if (!paged_) return;
    std::fprintf(stderr,
                 "      moved per step (mean) h2d %s d2h %s nvme read %s write %s | peak device "
                 "%s host %s nvme %s\n",
                 per_step(moved_sum_.h2d).c_str(), per_step(moved_sum_.d2h).c_str(),
                 per_step(moved_sum_.nvme_read).c_str(), per_step(moved_sum_.nvme_write).c_str(),
                 FormatBytes(peak_device_).c_str(), FormatBytes(peak_host_).c_str(),
                 FormatBytes(peak_nvme_).c_str());
  }

 private:
  const long steps_;  // --steps
  long steps_run_ = 0;
  double timed_s_ = 0, timed_tokens_ = 0, last_elapsed_s_ = 0;
  float first_loss_ = 0, last_loss_ = 0;
  StepStats::Moved moved_sum_;
  bool paged_ = false;
  uint64_t peak_device_ = 0, peak_host_ = 0, peak_nvme_ = 0;
};

// What was saved when a stop came after `last_step`: the checkpoint the paged trainer wrote
// for it (Note [Stopping after a step]: for a stop before the last step, or the interval's), or
// nothing.
std::string SavedAfterStop(const TrainOptions& o, long last_step, long start_step) {
  if (last_step == start_step) return "nothing new saved";
  const bool checkpoints = o.ckpt_every > 0 && !o.ckpt_dir.empty();
  if (checkpoints && (last_step < o.steps || last_step % o.ckpt_every == 0)) {
    return "checkpoint " + scheduler::ManifestNameForStep(last_step) + " written to " +
           o.ckpt_dir + "; resume with --resume";
  }
  return checkpoints ? "no checkpoint of this step"
                     : "no checkpoint (checkpoints need --nvme-dir, --ckpt-dir and --ckpt-every)";
}

// The run, from a created trainer: progress, --log-json, the summary or the stop line. Only
// rank 0 prints progress and the summary (`print`).
Status RunSteps(Trainer& trainer, const TrainOptions& o, StepLog* log, bool print,
                CommandContext& ctx) {
  RunSummary summary(o.steps);
  long last_step = trainer.start_step();
  Status log_status;
  STRATA_RETURN_IF_ERROR(trainer.run([&](const StepStats& s) {
    last_step = s.step;
    summary.add(s);
    if (print) PrintStep(s, o.steps);
    if (log == nullptr || !log_status.ok()) return;
    log_status = log->write(s);
    if (!log_status.ok()) RequestStop(-1);  // a failed log fails the run, after this step
  }));
  if (!log_status.ok()) {
    return log_status.with_context("stopped after step " + std::to_string(last_step) + " (" +
                                  SavedAfterStop(o, last_step, trainer.start_step()) + ")");
  }
  // A signal during the last step or after it stopped nothing: the run is complete.
  if (const int signo = StopSignalNumber(); signo != 0 && last_step < o.steps) {
    std::fprintf(stderr, "strata: stopped by %s after step %ld of %ld; %s\n",
                 StopSignalName(signo), last_step, o.steps,
                 SavedAfterStop(o, last_step, trainer.start_step()).c_str());
    ctx.stop_signal = signo;
    return Status::Ok();
  }
  if (print) summary.print();
  return Status::Ok();
}

// Everything that can be checked is checked before the trainer is created (nothing read,
// planned or allocated yet), and --log-json is opened only after it was (a refused run, e.g.
// one whose NVMe store another process holds, leaves an existing log alone).
Status RunTrainOnRanks(TrainFlags& f, CommandContext& ctx, const TrainRanks& ranks) {
  STRATA_RETURN_IF_ERROR(ApplyRankOutputs(f.o, ranks.comm.get(), ranks.rank, ranks.size));
  STRATA_RETURN_IF_ERROR(CheckTrainOutputs(f.o, ranks.rank == 0 ? f.log_json : ""));
  f.o.stop_signal = InstallStopSignals();
  const TrainOptions& o = f.o;
  STRATA_ASSIGN_OR_RETURN(auto trainer, Trainer::Create(o));
  std::unique_ptr<StepLog> log;
  if (!f.log_json.empty() && ranks.rank == 0) {
    STRATA_ASSIGN_OR_RETURN(log, StepLog::Open(f.log_json, o.resume, trainer->start_step()));
  }
  Logger("train")->info("model {} | data {} | batch {} x seq {} | {} steps",
                        trainer->config().to_string(), trainer->data_name(), o.batch,
                        trainer->seq(), o.steps);
  return RunSteps(*trainer, o, log.get(), ranks.rank == 0, ctx);
}

// The job's ranks first (tools/train_ranks.h); a rank that fails in a job of several prints its
// error and ends the job, so that its peers do not wait on it.
Status RunTrain(TrainFlags& f, const CLI::App& cmd, CommandContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckLogLevel(f.log_level));
  SetLogLevel(f.log_level);
  STRATA_RETURN_IF_ERROR(ApplyFlags(f, cmd));
  STRATA_ASSIGN_OR_RETURN(TrainRanks ranks, OpenTrainRanks(f.o));
  if (ranks.rank != 0 && (f.log_level == "info" || f.log_level == "debug")) SetLogLevel("warn");
  Status s = RunTrainOnRanks(f, ctx, ranks);
  if (!s.ok() && ranks.size > 1) {
    std::fprintf(stderr, "strata: error: rank %d of %d: %s\n", ranks.rank, ranks.size,
                 s.message().c_str());
    std::fflush(stderr);
    ranks.comm->abort(ExitCodeFor(s));
  }
  return s;
}

// The model's shape and the data: --model, the shape overrides, --data, --batch, --seq, --steps.
void AddModelAndDataOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--model", o.model.preset,
                  "Model preset: tiny, small (~10M, vocab 256), gpt2, gpt2-medium, gpt2-large, "
                  "gpt2-xl")
      ->capture_default_str();
  cmd->add_option("--n-layer", flags->n_layer, "Override: number of transformer blocks");
  cmd->add_option("--n-head", flags->n_head, "Override: attention heads");
  cmd->add_option("--n-embd", flags->n_embd, "Override: embedding width (divisible by heads)");
  cmd->add_option("--vocab", flags->vocab, "Override: vocabulary size");
  cmd->add_option("--block-size", flags->block_size, "Override: the model's context length");
  cmd->add_option("--data", o.data, "Training data: builtin, a text file or a .bin token file")
      ->capture_default_str();
  cmd->add_option("--batch", o.batch, "Rows per step (B)")->capture_default_str();
  cmd->add_option("--seq", o.seq, "Tokens per row (T); default min(context, 256)");
  cmd->add_option("--steps", o.steps,
                  "Optimizer steps (0 with --export writes the initial weights)")
      ->capture_default_str();
}

// AdamW, the schedule, clipping, the seed and threads.
void AddOptimizerOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr", o.min_lr, "Cosine schedule floor (default 10% of --lr)");
  cmd->add_option("--warmup", o.warmup, "Linear warmup steps")->capture_default_str();
  cmd->add_option("--lr-schedule", o.lr_schedule, "constant or cosine")->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay,
                  "AdamW decoupled weight decay, on tensors with 2+ dims only")
      ->capture_default_str();
  cmd->add_option("--beta1", o.beta1, "AdamW beta1")->capture_default_str();
  cmd->add_option("--beta2", o.beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--eps", o.eps, "AdamW epsilon")->capture_default_str();
  cmd->add_option("--grad-clip", o.grad_clip, "Clip gradients to this global L2 norm (0: off)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the initialisation")->capture_default_str();
  cmd->add_option("--threads", o.threads, "Compute threads (TBB and OpenBLAS); 0 = all cores")
      ->capture_default_str();
}

// Weights in and out, the device and its budget.
void AddWeightsAndDeviceOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--init", o.init_path, "Start from these weights (safetensors, HF GPT-2 names)");
  cmd->add_option("--export", o.export_path, "Write the final weights here (safetensors)");
  cmd->add_option("--export-grads", o.export_grads_path,
                  "Write step 1's gradients (before clipping) here (safetensors)");
  cmd->add_option("--device", o.device,
                  "Device backend: sim (host memory, the CPU kernels) or cuda (an NVIDIA GPU; "
                  "its kernel table is not filled in yet, so it refuses to train)")
      ->capture_default_str();
  cmd->add_option("--gpu-mem", flags->gpu_mem,
                  "Device memory budget (e.g. 512M, 2G); default: what the run needs");
  cmd->add_option("--sim-link-gbps", o.sim_link_gbps,
                  "Sim device: host<->device copy rate in GB/s, to model PCIe (0: memcpy speed)");
}

// The paged engine: host and NVMe tiers, pages, placement, checkpoints.
void AddPagingOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--host-mem", flags->host_mem,
                  "Pinned host pool budget (paged engine); default: every page of state");
  cmd->add_option("--nvme-dir", o.nvme_dirs,
                  "NVMe tier directory (repeatable: pages stripe across them); must be empty");
  cmd->add_option("--nvme-mem", flags->nvme_mem,
                  "NVMe slot capacity across --nvme-dir; default 3x the model state");
  cmd->add_option("--page-size", flags->page_size,
                  "Page size of model state (power of two >= 4K); default 16M");
  cmd->add_option("--params-on", o.params_on, "Home of parameters: device, host, nvme or auto")
      ->capture_default_str();
  cmd->add_option("--optimizer-on", o.optimizer_on,
                  "Home of the AdamW moments: host, nvme or auto (device: not yet)")
      ->capture_default_str();
  cmd->add_option("--micro-batch", o.micro_batch,
                  "Rows per micro-batch (divides --batch; gradients accumulate); 0 = --batch");
  cmd->add_option("--micro-batch-order", o.micro_batch_order,
                  "With micro-batches: layer-major (every micro-batch through a block while it is "
                  "on the device), micro-batch-major, or auto (the plan's choice by predicted "
                  "traffic, printed first)")
      ->capture_default_str();
  cmd->add_option(
         "--recompute", o.recompute,
         "Activation checkpointing per block: none, all or auto (when the budget needs it)")
      ->capture_default_str();
  cmd->add_option("--trace", o.trace_path,
                  "Write a Chrome trace (Perfetto) of every op and move: one track per queue");
  cmd->add_option("--ckpt-dir", o.ckpt_dir,
                  "Checkpoint records (the state itself: manifests of the --nvme-dir page store)");
  cmd->add_option("--ckpt-every", o.ckpt_every, "Checkpoint after every N steps (0: never)")
      ->capture_default_str();
  cmd->add_flag("--resume", o.resume,
                "Continue from the checkpoint in --ckpt-dir (same model, data, optimizer, batch, "
                "dirs); starts fresh when there is none yet");
  cmd->add_option("--resume-from", o.resume_from,
                  "Resume from this listed checkpoint step instead of the newest (implies "
                  "--resume; `strata ckpt list` shows them)");
  cmd->add_option("--keep-checkpoints", o.keep_checkpoints,
                  "Checkpoints kept (the record lists the K newest; older manifests are deleted)")
      ->capture_default_str();
  cmd->add_flag("--delayed-update", o.delayed_update,
                "Opt-in: AdamW of step s runs during step s+1, whose compute uses the parameters "
                "one update behind (ZeRO-Offload's DPU); not bit-identical to exact training");
  cmd->add_flag("--movement-only", o.movement_only,
                "Measure the movement alone: every page move, prefetch and optimizer update of "
                "the paged engine runs, the device kernels do not (losses read 0); its step time "
                "is the movement-only time of this configuration");
  cmd->add_option("--host-eviction", o.host_eviction,
                  "How the host pool picks what to drop: belady (the order of a step, learned "
                  "from step 2), lru (least recently used, optimizer moments first) or auto "
                  "(belady, lru in layer-major order)")
      ->capture_default_str();
}

// Data parallelism (docs/parallel.md): the ranks come from mpirun.
void AddParallelOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--dp", o.dp,
                  "Data-parallel ranks (launch with mpirun -np N); 0 = the ranks / (tp * pp)")
      ->capture_default_str();
  cmd->add_option("--tp", o.tp,
                  "Tensor-parallel ranks per block (ranks are tp innermost, then dp, then pp); "
                  "the grid is checked, training with --tp above 1 is not built yet")
      ->capture_default_str();
  cmd->add_option("--pp", o.pp,
                  "Pipeline stages; the grid is checked, training with --pp above 1 is not built "
                  "yet")
      ->capture_default_str();
  cmd->add_option("--schedule", o.schedule, "Pipeline schedule: gpipe or 1f1b")
      ->capture_default_str();
  cmd->add_option("--pp-partition", o.pp_partition,
                  "Blocks per pipeline stage: uniform, auto (balanced by measured block times) "
                  "or N0,N1,... (one count per stage)")
      ->capture_default_str();
  cmd->add_option("--comm", o.comm,
                  "Collectives: mpi (host buffers), nccl (GPU buffers) or auto (nccl on a cuda "
                  "device, else mpi; without mpirun: one rank, no MPI)")
      ->capture_default_str();
  cmd->add_option("--shard", o.shard,
                  "Model state across data-parallel ranks: none (replicated), all (ZeRO-3: every "
                  "block sharded through the page manager) or auto (OSDP: each block sharded or "
                  "replicated, chosen to minimise the predicted step time under the rank's "
                  "budget)")
      ->capture_default_str();
  cmd->add_option("--split-ops", o.split_ops,
                  "Operator splitting of sharded blocks: 1, 2 or 4 (gather and compute their MLP "
                  "weights in that many slices, so only a slice is live on the device) or auto "
                  "(split only when whole blocks do not fit --gpu-mem)")
      ->capture_default_str();
  cmd->add_option("--comm-timeout", o.comm_timeout_s,
                  "Seconds a collective may take before the run fails (a dead or hung rank)")
      ->capture_default_str();
}

// Which engine, and what the run writes besides progress.
void AddEngineAndOutputOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--engine", o.engine,
                  "memory (all state on the device), paged (the Engine), or auto: paged when a "
                  "paging flag is given or --gpu-mem is below the in-memory need")
      ->capture_default_str();
  cmd->add_option("--log-json", flags->log_json,
                  "Write one JSON object per step: step, loss, tokens_per_s, elapsed_s, grad_norm, "
                  "moved_bytes {h2d, d2h, nvme_read, nvme_write}, overlap, peak_bytes {device, "
                  "host, nvme}");
  cmd->add_option("--log-level", flags->log_level, "debug, info, warn, error or off")
      ->capture_default_str();
}

}  // namespace

void AddTrainCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train a GPT-2-architecture model.\n"
      "Data: --data builtin (a generated English-like corpus, byte-level, the default), a text\n"
      "file (one token per byte, vocab 256) or an llm.c/nanoGPT token file (.bin: 256 int32\n"
      "header with magic 20240520, then uint16 tokens). Step k row i reads the window starting\n"
      "at token ((k*B + i) * T) mod (N - T - 1).");
  AddModelAndDataOptions(cmd, flags.get());
  AddOptimizerOptions(cmd, flags.get());
  AddWeightsAndDeviceOptions(cmd, flags.get());
  AddPagingOptions(cmd, flags.get());
  AddEngineAndOutputOptions(cmd, flags.get());
  AddParallelOptions(cmd, flags.get());
  flags->faults.add_option(cmd);
  cmd->callback([flags, cmd, &ctx] { ctx.status = RunTrain(*flags, *cmd, ctx); });
}

}  // namespace strata::tools
