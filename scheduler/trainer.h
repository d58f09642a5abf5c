// Trainer: the whole training loop of a model (core/nn/model.h) — data, forward, backward,
// global-norm clipping, AdamW, logging hooks. Two implementations, made by CreateTrainer
// (scheduler/trainer_factory.h), which includes both; this interface includes neither:
// - the in-memory trainer (scheduler/in_memory_trainer.cc): every byte of state in device
//   memory. It is the reference that every offloaded configuration must reproduce bit for bit;
// - the paged trainer (scheduler/paged_trainer.cc): model state in pages under --gpu-mem,
//   --host-mem and --nvme-dir budgets, run by the Engine (scheduler/engine.h).
// Which one runs: --engine memory|paged, or auto (the default): paged as soon as any paging
// flag (kPagingOptions, trainer_factory.h) is given, or when --gpu-mem is below what the
// in-memory trainer needs.
// Checkpoints and --resume need the paged trainer and --nvme-dir.
//
// Note [Canonical arithmetic] (why both give the same bits)
// - The global gradient norm is summed per block: partial sums (double) over fixed 4 KiB chunks
//   of the block's contiguous gradient, added in chunk order, then over blocks in index order
//   (Note [Norm in chunk order] in scheduler/grad_norm.h). It never depends on pages.
// - AdamW is element-wise (its vector and scalar paths give the same bits), so running it per
//   page, split at tensor boundaries, equals running it per tensor.
// - Micro-batches add up into the block's gradients, micro-batch 0 first, each micro-batch's
//   contribution made from zero and then added (the gradient-contribution rule of
//   core/nn/model.h), exactly as the in-memory trainer does; dloss = 1 / (batch * seq).
//   The tied wte gradient takes every head backward, then every embedding backward (Note [Tied
//   gradient order] in scheduler/activations.h), so both micro-batch orders give the same bits.
//
// Threads: CreateTrainer and Run from one thread. Compute runs on the device's compute stream
// inside a tbb::task_arena of `threads` threads; OpenBLAS uses the same count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/nn/model.h"
#include "core/util/status.h"

namespace strata {

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
  // The model trained: its family, shape and parameter count.
  virtual const ModelShape& shape() const = 0;
  virtual int seq() const = 0;
  virtual std::string data_name() const = 0;
  // The steps already done before Run's first step: a resumed checkpoint's step (--resume), 0
  // for a fresh run. Run's first StepStats::step is start_step() + 1.
  virtual long start_step() const { return 0; }
  // Runs steps start_step() .. options.steps - 1 (TrainOptions, scheduler/train_options.h),
  // calling on_step after each, then writes --export; stops early on options.stop_signal (Note
  // [Stopping after a step]).
  virtual Status run(const std::function<void(const StepStats&)>& on_step) = 0;
};

}  // namespace strata
