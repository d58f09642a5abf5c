// One randomized configuration of `strata stress`: a tiny GPT-2 or LLaMA, its data and optimizer, and how
// the paged engine holds it (page size, budgets, placements, micro-batches, recompute, eviction,
// NVMe directories, checkpoints). Drawn from (--seed, index) alone, so a configuration can be
// replayed; the command lines it gives are those of `strata train`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata::stress {

struct StressConfig {
  int index = 0;      // 1-based position in the soak
  uint64_t seed = 0;  // this configuration's own seed (mixed from --seed and index)
  // The model and its data. LLaMA's own shape: n_kv_head (divides n_head), ffn_dim, a tied head.
  std::string arch = "gpt2";
  int n_layer = 1, n_head = 1, n_embd = 32, vocab = 256, block_size = 64, seq = 64;
  int n_kv_head = 1, ffn_dim = 64;
  bool tie_embeddings = false;
  int batch = 1, micro_batch = 0;  // micro_batch 0: one micro-batch
  long steps = 4;
  bool builtin_data = true;  // else a token file of `vocab` (WriteTokenFile)
  // The optimizer.
  std::string lr = "1e-3", grad_clip = "1";
  long warmup = 0;
  std::string lr_schedule = "constant";
  uint64_t init_seed = 1;
  // The paged engine.
  uint64_t page_bytes = 16384;
  uint64_t gpu_mem = 0, host_mem = 0;  // 0: the default (what the run needs)
  std::string params_on = "auto", optimizer_on = "auto", recompute = "none";
  std::string host_eviction = "auto";
  std::string micro_batch_order = "auto";
  int nvme_dirs = 1;
  long ckpt_every = 1;
};

// Draws configuration `index` of the soak seeded `seed`.
StressConfig DrawConfig(uint64_t seed, int index);

// Whether the paged engine's planner accepts the configuration's budgets (the same check a run
// makes at start): OK, or its refusal (the configuration is then skipped).
Status CheckPagedPlan(const StressConfig& c);

// A token file (llm.c format) of random tokens below c.vocab, for runs without builtin data.
Status WriteTokenFile(const StressConfig& c, const std::string& path);

// `train` and the flags that the reference and the paged runs share; `data` is the token file
// (ignored with builtin data).
std::vector<std::string> CommonArgs(const StressConfig& c, const std::string& data);
// The paged engine's flags, its NVMe directories and --ckpt-dir under `dir`.
std::vector<std::string> PagingArgs(const StressConfig& c, const std::string& dir);
// The NVMe directories PagingArgs names.
std::vector<std::string> NvmeDirs(const StressConfig& c, const std::string& dir);
// The --ckpt-dir PagingArgs names.
std::string CkptDir(const std::string& dir);
// One line: shape, batch, page, budgets, placements.
std::string Describe(const StressConfig& c);

}  // namespace strata::stress
