// TrainOptions: what one `strata train` run is asked to do, in rooms. Each room is the options of
// one concern (the model, the data, the optimizer, the budgets and placement, the parallel grid,
// checkpoints, outputs); code that needs one room takes only that struct (LearningRateAt takes
// the optimizer's, RanksOf the grid's), and TrainOptions composes them with the run-level rest.
// The CLI fills it (tools/train_flags.cc); tests and benches build it themselves.
//
// Plain data: no invariants beyond each field's comment; Trainer creation
// (scheduler/trainer_factory.h) validates every field before anything runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/kernels/dtype.h"
#include "core/util/status.h"

namespace strata::storage {
class FaultInjector;
}  // namespace strata::storage
namespace strata::parallel {
class Comm;
}  // namespace strata::parallel

namespace strata {

// The model to train: a preset or --init's shape, then the shape flags
// (scheduler/model_registry.h).
struct ModelChoice {
  std::string preset = "small";  // --model
  bool preset_given = false;     // --model was on the command line
  std::optional<int> n_layer, n_head, n_embd, vocab_size, block_size;  // shape flags
  std::string init_path;  // --init: weights (and shape) from safetensors
  // --arch: the model family (scheduler/model_registry.h); empty: the --model preset's (or
  // --init's).
  std::string arch;
  // LLaMA's shape flags (--n-kv-head, --ffn-dim, --rope-theta, --norm-eps, --tie-embeddings).
  std::optional<int> n_kv_head, ffn_dim;
  std::optional<double> rope_theta;
  std::optional<float> norm_eps;
  std::optional<bool> tie_embeddings;
};

// The tokens of a step: where they come from and how the step's rows are cut.
struct DataOptions {
  std::string path = "builtin";  // --data: a file path, or "builtin" for the generated corpus
  int batch = 8;                 // --batch: rows per step
  int seq = 0;                   // --seq: tokens per row; 0 = min(block_size, 256)
  int micro_batch = 0;           // --micro-batch: rows per micro-batch; 0 = --batch (one)
};

// AdamW and its learning-rate schedule (LearningRateAt).
struct OptimizerOptions {
  float lr = 3e-4f;
  float min_lr = -1.0f;                  // cosine floor; < 0 means 10% of lr
  long warmup = 0;                       // linear warmup steps
  std::string lr_schedule = "constant";  // constant | cosine
  float weight_decay = 0.1f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float grad_clip = 1.0f;       // max global norm; <= 0 disables clipping
  bool delayed_update = false;  // --delayed-update: one-step-stale updates (paged only)
};

// Which engine runs, the memory budgets of each tier and what is placed where (the paged
// trainer; scheduler/trainer.h says when it runs).
struct BudgetOptions {
  std::string engine = "auto";         // --engine: auto | memory | paged
  bool paging_flag_given = false;      // set by the CLI when any of kPagingOptions was given
  uint64_t gpu_mem = 0;                // --gpu-mem: sim device capacity; 0 = what the run needs
  uint64_t host_mem = 0;               // --host-mem: the pinned host pool; 0 = what the run needs
  std::vector<std::string> nvme_dirs;  // --nvme-dir (repeatable): the NVMe tier
  uint64_t nvme_mem = 0;               // --nvme-mem: NVMe slot capacity; 0 = sized by the trainer
  uint64_t page_bytes = 0;             // --page-size; 0 = 16 MiB (power of two, >= 4 KiB)
  std::string params_on = "auto";      // device | host | nvme | auto
  std::string optimizer_on = "auto";   // device | host | nvme | auto (AdamW moments)
  std::string recompute = "none";      // none | all | auto (activation checkpointing per block)
  // auto | layer-major | micro-batch-major (Note [Micro-batch order] in step_program.h)
  std::string micro_batch_order = "auto";
  // --host-eviction: how the host pool picks victims: belady (over the access plan learned from
  // step 2, Note [Host access plan] in scheduler/host_pages.h) or lru (steered by demote).
  // auto: belady, but lru in layer-major order (scheduler/paged_trainer_impl.h).
  std::string host_eviction = "auto";
};

// Data, tensor and pipeline parallelism: the 3D grid (parallel/grid.h; docs/parallel.md). The
// ranks come from the launcher (mpirun); the CLI makes the Comm and checks --dp against the world
// size. The paged engine runs on each rank's slice (--tp) and stage (--pp).
struct GridOptions {
  int dp = 0;                            // --dp: data-parallel ranks; 0 = world size / (tp * pp)
  int tp = 1;                            // --tp: tensor-parallel ranks per block
  int pp = 1;                            // --pp: pipeline stages
  std::string schedule = "1f1b";         // --schedule: gpipe | 1f1b
  std::string pp_partition = "uniform";  // --pp-partition: uniform | auto | N0,N1,...
  std::string comm = "auto";   // --comm: mpi | nccl | auto (nccl on a cuda device, else mpi)
  std::string shard = "none";  // --shard: none (replicated state) | all | auto
  // --split-ops 1 | 2 | 4 | auto: operator splitting of sharded blocks (Note [Split operators]
  // in scheduler/split_plan.h); auto splits only when the whole blocks do not fit --gpu-mem.
  std::string split_ops = "1";
  double comm_timeout_s = 300;  // --comm-timeout: a collective that takes longer fails the run
  // The job's ranks (parallel/comm.h). Borrowed: must outlive the Trainer. nullptr: one rank.
  parallel::Comm* ranks = nullptr;
};

// Checkpoints and resume (scheduler/checkpoint.h): the paged trainer with --nvme-dir.
struct CheckpointOptions {
  std::string dir;        // --ckpt-dir: checkpoint records
  long every = 0;         // --ckpt-every N: checkpoint after every N steps; 0 = never
  bool resume = false;    // --resume: continue from the checkpoint in --ckpt-dir
  int keep = 2;           // --keep-checkpoints K: the record lists the K newest
  long resume_from = -1;  // --resume-from STEP (implies --resume); -1 = the newest
  // --discard-newer: --resume-from may drop the listed checkpoints newer than STEP (refused
  // without it, naming them).
  bool discard_newer = false;
};

// The files a run writes besides checkpoints; empty: not written.
struct OutputOptions {
  std::string export_path;        // --export: final weights as safetensors
  // --export-dir: the final weights as a Hugging Face model directory, export_path its
  // model.safetensors and export_config its config.json (Model::hf_config, set by CreateTrainer).
  std::string export_dir;
  std::string export_config;
  std::string export_grads_path;  // --export-grads: step 1's gradients before clipping
  std::string trace_path;         // --trace: Chrome trace JSON of every op and move
};

struct TrainOptions {
  ModelChoice model;
  DataOptions data;
  OptimizerOptions optimizer;
  BudgetOptions budgets;
  GridOptions grid;
  CheckpointOptions checkpoints;
  OutputOptions outputs;

  long steps = 20;
  uint64_t seed = 1337;
  int threads = 0;             // 0 = all cores
  double sim_link_gbps = 0;    // --sim-link-gbps: host<->device copy rate of the sim device
  std::string device = "sim";  // --device: sim | cuda (core/device/create_device.h)
  // --gds auto | on | off: GPUDirect Storage (cuFile) for NVMe <-> GPU pages without a host
  // bounce. auto uses it when the build has it and the filesystem supports it; this build has no
  // cuFile path yet, so auto means off and on is refused with the reason.
  std::string gds = "auto";
  // --dtype fp32 | bf16: the compute dtype (Note [bf16 compute] in core/kernels/dtype.h); the
  // pages (weights, gradients, AdamW moments) are fp32 either way.
  std::string dtype = "fp32";
  bool movement_only = false;  // --movement-only: skip the kernels (paged only)
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
};

// Whether `stop_signal` (TrainOptions::stop_signal) asks Run to stop after the step just done.
// Relaxed: the flag carries no data; a step more or less before it is seen changes nothing.
inline bool StopRequested(const std::atomic<int>* stop_signal) {
  return stop_signal != nullptr && stop_signal->load(std::memory_order_relaxed) != 0;
}

// The learning rate of 0-based step `step` of a run of `steps` under the optimizer's schedule.
float LearningRateAt(const OptimizerOptions& optimizer, long steps, long step);

// --dtype as the kernels' enum (kFp32 for anything but "bf16"; Trainer creation refuses other
// text before this is asked).
kernels::Dtype ComputeDtype(const std::string& dtype);

// The shape flags every family has (--n-layer --n-head --n-embd --vocab --block-size), over a
// preset's or a file's shape.
template <typename Config>
void ApplyShapeFlags(const ModelChoice& m, Config& c) {
  if (m.n_layer) c.n_layer = *m.n_layer;
  if (m.n_head) c.n_head = *m.n_head;
  if (m.n_embd) c.n_embd = *m.n_embd;
  if (m.vocab_size) c.vocab_size = *m.vocab_size;
  if (m.block_size) c.block_size = *m.block_size;
}

}  // namespace strata
