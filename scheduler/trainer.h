// Trainer: the whole training loop of a GPT — data, forward, backward, global-norm clipping,
// AdamW, logging hooks. Two implementations behind Trainer::Create:
// - the in-memory trainer (scheduler/trainer.cc): every byte of state in device memory. It is the
//   reference that every offloaded configuration must reproduce bit for bit;
// - the paged trainer (scheduler/paged_trainer.cc): model state in pages under --gpu-mem,
//   --host-mem and --nvme-dir budgets, run by the Engine (scheduler/engine.h).
// Which one runs: --engine memory|paged, or auto (the default): paged as soon as any paging
// flag (kPagingOptions) is given, or when --gpu-mem is below what the in-memory trainer needs.
// Checkpoints and --resume need the paged trainer and --nvme-dir.
//
// Note [Canonical arithmetic] (why both give the same bits)
// - The global gradient norm is summed per block: partial sums (double) over fixed 4 KiB chunks
//   of the block's contiguous gradient, added in chunk order, then over blocks in index order
//   (Note [Norm in chunk order] in scheduler/grad_norm.h). It never depends on pages.
// - AdamW is element-wise (its vector and scalar paths give the same bits), so running it per
//   page, split at tensor boundaries, equals running it per tensor.
// - Micro-batches add up into the block's gradients, micro-batch 0 first, each micro-batch's
//   contribution made from zero and then added (Note [Gradient contributions] in
//   core/nn/gpt_blocks.h), exactly as the in-memory trainer does; dloss = 1 / (batch * seq).
//   The tied wte gradient takes every head backward, then every embedding backward (Note [Tied
//   gradient order] in scheduler/activations.h), so both micro-batch orders give the same bits.
//
// Threads: Create and Run from one thread. Compute runs on the device's compute stream inside
// a tbb::task_arena of `threads` threads; OpenBLAS uses the same count.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/kernels/dtype.h"
#include "core/nn/gpt_config.h"
#include "core/util/option.h"
#include "core/util/status.h"

namespace strata::storage {
class FaultInjector;
}  // namespace strata::storage
namespace strata::parallel {
class Comm;
}  // namespace strata::parallel

namespace strata {

// The options that only the paged trainer has: any of them selects it under --engine auto.
inline constexpr Option kPagingOptions[] = {
    Option::kHostMem,         Option::kNvmeDir,      Option::kNvmeMem,
    Option::kPageSize,        Option::kParamsOn,     Option::kOptimizerOn,
    Option::kMicroBatch,      Option::kRecompute,    Option::kTrace,
    Option::kCkptDir,         Option::kCkptEvery,    Option::kResume,
    Option::kDelayedUpdate,   Option::kMovementOnly, Option::kHostEviction,
    Option::kKeepCheckpoints, Option::kResumeFrom,   Option::kMicroBatchOrder,
    Option::kDiscardNewer};

struct ModelChoice {
  std::string preset = "small";  // --model
  bool preset_given = false;     // --model was on the command line
  std::optional<int> n_layer, n_head, n_embd, vocab_size, block_size;  // shape flags
};

struct TrainOptions {
  ModelChoice model;
  std::string data = "builtin";  // a file path, or "builtin" for the generated corpus
  int batch = 8;                 // rows per step
  int seq = 0;                   // tokens per row; 0 = min(block_size, 256)
  long steps = 20;
  float lr = 3e-4f;
  float min_lr = -1.0f;                  // cosine floor; < 0 means 10% of lr
  long warmup = 0;                       // linear warmup steps
  std::string lr_schedule = "constant";  // constant | cosine
  float weight_decay = 0.1f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float grad_clip = 1.0f;  // max global norm; <= 0 disables clipping
  uint64_t seed = 1337;
  int threads = 0;                // 0 = all cores
  std::string init_path;          // --init: weights (and shape) from safetensors
  std::string export_path;        // --export: final weights as safetensors
  std::string export_grads_path;  // --export-grads: step 1's gradients before clipping
  uint64_t gpu_mem = 0;           // --gpu-mem: sim device capacity; 0 = what the run needs
  int micro_batch = 0;            // --micro-batch: rows per micro-batch; 0 = --batch (one)
  double sim_link_gbps = 0;       // --sim-link-gbps: host<->device copy rate of the sim device
  std::string device = "sim";     // --device: sim | cuda (core/device/create_device.h)
  // --gds auto | on | off: GPUDirect Storage (cuFile) for NVMe <-> GPU pages without a host
  // bounce. auto uses it when the build has it and the filesystem supports it; this build has no
  // cuFile path yet, so auto means off and on is refused with the reason.
  std::string gds = "auto";
  // --dtype fp32 | bf16: the compute dtype (Note [bf16 compute] in core/kernels/dtype.h); the
  // pages (weights, gradients, AdamW moments) are fp32 either way.
  std::string dtype = "fp32";

  // Paging (the paged trainer; see the header comment for when it runs).
  std::string engine = "auto";         // auto | memory | paged
  uint64_t host_mem = 0;               // --host-mem: the pinned host pool; 0 = what the run needs
  std::vector<std::string> nvme_dirs;  // --nvme-dir (repeatable): the NVMe tier
  uint64_t nvme_mem = 0;               // --nvme-mem: NVMe slot capacity; 0 = sized by the trainer
  uint64_t page_bytes = 0;             // --page-size; 0 = 16 MiB (power of two, >= 4 KiB)
  std::string params_on = "auto";      // device | host | nvme | auto
  std::string optimizer_on = "auto";   // device | host | nvme | auto (AdamW moments)
  std::string recompute = "none";      // none | all | auto (activation checkpointing per block)
  // auto | layer-major | micro-batch-major (Note [Micro-batch order] in step_program.h)
  std::string micro_batch_order = "auto";
  std::string trace_path;              // --trace: Chrome trace JSON of every op and move
  std::string ckpt_dir;                // --ckpt-dir: checkpoint records (scheduler/checkpoint.h)
  long ckpt_every = 0;                 // --ckpt-every N: checkpoint after every N steps; 0 = never
  bool resume = false;                 // --resume: continue from the checkpoint in --ckpt-dir
  int keep_checkpoints = 2;            // --keep-checkpoints K: the record lists the K newest
  long resume_from = -1;               // --resume-from STEP (implies --resume); -1 = the newest
  // --discard-newer: --resume-from may drop the listed checkpoints newer than STEP (refused
  // without it, naming them).
  bool discard_newer = false;
  bool delayed_update = false;         // --delayed-update: one-step-stale updates (paged only)
  bool movement_only = false;          // --movement-only: skip the kernels (paged only)
  // --host-eviction: how the host pool picks victims: belady (over the access plan learned from
  // step 2, Note [Host access plan] in scheduler/host_pages.h) or lru (steered by demote).
  // auto: belady, but lru in layer-major order (scheduler/paged_trainer_impl.h).
  std::string host_eviction = "auto";
  bool paging_flag_given = false;  // set by the CLI when any of kPagingOptions was given
  // Note [Stopping after a step]: when this reads non-zero after a step (not the last one,
  // after which the run just finishes, --export included), Run stops there: the
  // paged trainer drains its updates, writes a checkpoint for that step when checkpoints are on
  // (--ckpt-dir with --ckpt-every > 0) and waits for it; neither trainer writes --export or
  // --trace; Run returns OK with fewer than `steps` steps done (the last on_step says which).
  // Borrowed (the CLI's signal flag, tools/stop_signals.h); must outlive Run. nullptr: never.
  const std::atomic<int>* stop_signal = nullptr;
  // Tests: makes the NVMe tier's disk misbehave (storage/fault_injector.h). Borrowed: must
  // outlive the Trainer. Not a flag.
  storage::FaultInjector* nvme_faults = nullptr;

  // Data parallelism (docs/parallel.md). The ranks come from the launcher (mpirun); the CLI
  // makes the Comm and checks --dp against the world size.
  int dp = 0;                   // --dp: data-parallel ranks; 0 = the world size / (tp * pp)
  // Tensor and pipeline parallelism (the 3D grid, parallel/grid.h; docs/parallel.md): the paged
  // engine on each rank's slice (--tp) and stage (--pp).
  int tp = 1;                           // --tp: tensor-parallel ranks per block
  int pp = 1;                           // --pp: pipeline stages
  std::string schedule = "1f1b";        // --schedule: gpipe | 1f1b
  std::string pp_partition = "uniform";  // --pp-partition: uniform | auto | N0,N1,...
  std::string comm = "auto";    // --comm: mpi | nccl | auto (nccl on a cuda device, else mpi)
  std::string shard = "none";   // --shard: none (replicated state) | all | auto
  // --split-ops 1 | 2 | 4 | auto: operator splitting of sharded blocks (Note [Split operators]
  // in scheduler/split_plan.h); auto splits only when the whole blocks do not fit --gpu-mem.
  std::string split_ops = "1";
  double comm_timeout_s = 300;  // --comm-timeout: a collective that takes longer fails the run
  // The job's ranks (parallel/comm.h). Borrowed: must outlive the Trainer. nullptr: one rank.
  parallel::Comm* ranks = nullptr;
};

struct StepStats {
  long step = 0;   // 1-based
  float loss = 0;  // mean loss of this step's batch, before its update
  float lr = 0;
  double grad_norm = 0;  // global L2 norm before clipping
  bool clipped = false;
  double step_s = 0;
  double elapsed_s = 0;     // since the first step started
  double tokens_per_s = 0;  // this step's tokens / step_s
  uint64_t device_peak_bytes = 0;

  // Paged trainer only (zero for the in-memory trainer).
  bool paged = false;
  struct Moved {
    uint64_t h2d = 0, d2h = 0, nvme_read = 0, nvme_write = 0;
  } moved_bytes;       // during this step
  double overlap = 0;  // fraction of the step in which compute ran while something moved
  uint64_t host_peak_bytes = 0;
  uint64_t nvme_peak_bytes = 0;
  // The device bytes of this rank's activations (a pipeline stage's in-flight micro-batches
  // included: Note [Stage activations] in scheduler/activations.h).
  uint64_t activation_bytes = 0;
  int recompute_layers = 0;  // blocks whose activations are rebuilt in backward
  // Tensor and pipeline parallelism: seconds the compute stream waited in the collectives it runs
  // itself (the tp group's all-reduces, the pipeline's activation receives).
  double compute_comm_s = 0;
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Validates everything (shape, data, sizes, budget) before any step; the Status says which
  // flag or file is wrong. InvalidArgument for bad flags, other codes for files/resources.
  static Result<std::unique_ptr<Trainer>> Create(const TrainOptions& options);

  virtual const GptConfig& config() const = 0;
  virtual int seq() const = 0;
  virtual std::string data_name() const = 0;
  // The steps already done before Run's first step: a resumed checkpoint's step (--resume), 0
  // for a fresh run. Run's first StepStats::step is start_step() + 1.
  virtual long start_step() const { return 0; }
  // Runs steps start_step() .. options.steps - 1, calling on_step after each, then writes
  // --export; stops early on options.stop_signal (Note [Stopping after a step]).
  virtual Status run(const std::function<void(const StepStats&)>& on_step) = 0;
};

// Whether options.stop_signal asks Run to stop after the step just done. Relaxed: the flag
// carries no data; a step more or less before it is seen changes nothing.
inline bool StopRequested(const TrainOptions& options) {
  return options.stop_signal != nullptr &&
         options.stop_signal->load(std::memory_order_relaxed) != 0;
}

// The learning rate of 0-based step `step` under the options' schedule.
float LearningRateAt(const TrainOptions& options, long step);

// --dtype as the kernels' enum (kFp32 for anything but "bf16"; Trainer::Create refuses other
// text before this is asked).
kernels::Dtype ComputeDtype(const TrainOptions& o);

// The model a run of `options` trains: --init's shape (unless --model was given) or the preset,
// then the shape flags; validated (InvalidArgument naming the flag, or --init's file errors).
Result<GptConfig> ResolveModelConfig(const TrainOptions& options);

}  // namespace strata
