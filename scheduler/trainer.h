// Trainer: the whole training loop of a GPT with every byte of state in device memory — data,
// forward, backward, global-norm clipping, AdamW, logging hooks. It is the in-memory reference
// that every offloaded configuration must reproduce bit for bit.
//
// Threads: Create and Run from one thread. Compute runs on the device's compute stream inside
// a tbb::task_arena of `threads` threads; OpenBLAS uses the same count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/nn/gpt_config.h"
#include "core/util/status.h"

namespace strata {

struct ModelChoice {
  std::string preset = "small";         // --model
  bool preset_given = false;            // --model was on the command line
  std::optional<int> n_layer, n_head, n_embd, vocab_size, block_size;  // shape flags
};

struct TrainOptions {
  ModelChoice model;
  std::string data = "builtin";  // a file path, or "builtin" for the generated corpus
  int batch = 8;                 // rows per step
  int seq = 0;                   // tokens per row; 0 = min(block_size, 256)
  long steps = 20;
  float lr = 3e-4f;
  float min_lr = -1.0f;          // cosine floor; < 0 means 10% of lr
  long warmup = 0;               // linear warmup steps
  std::string lr_schedule = "constant";  // constant | cosine
  float weight_decay = 0.1f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float grad_clip = 1.0f;        // max global norm; <= 0 disables clipping
  uint64_t seed = 1337;
  int threads = 0;               // 0 = all cores
  std::string init_path;         // --init: weights (and shape) from safetensors
  std::string export_path;       // --export: final weights as safetensors
  std::string export_grads_path; // --export-grads: step 1's gradients before clipping
  uint64_t gpu_mem = 0;          // --gpu-mem: sim device capacity; 0 = what the run needs
};

struct StepStats {
  long step = 0;             // 1-based
  float loss = 0;            // mean loss of this step's batch, before its update
  float lr = 0;
  double grad_norm = 0;      // global L2 norm before clipping
  bool clipped = false;
  double step_s = 0;
  double elapsed_s = 0;      // since the first step started
  double tokens_per_s = 0;   // this step's tokens / step_s
  uint64_t device_peak_bytes = 0;
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
  // Runs options.steps steps, calling on_step after each, then writes --export.
  virtual Status Run(const std::function<void(const StepStats&)>& on_step) = 0;
};

// The learning rate of 0-based step `step` under the options' schedule.
float LearningRateAt(const TrainOptions& options, long step);

}  // namespace strata
