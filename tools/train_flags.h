// The flags of `strata train` (tools/cmd_train.cc): what CLI11 parses them into, and how they
// become TrainOptions.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/util/status.h"
#include "scheduler/train_options.h"
#include "stress/fault_spec.h"

namespace strata::tools {

struct TrainFlags {
  TrainOptions o;
  std::string gpu_mem, host_mem, nvme_mem, page_size;
  int n_layer = 0, n_head = 0, n_embd = 0, vocab = 0, block_size = 0;
  int n_kv_head = 0, ffn_dim = 0;
  double rope_theta = 0;
  float norm_eps = 0;
  bool tie_embeddings = false;
  std::string log_json;
  std::string log_level = "info";
  // Not a flag: armed from STRATA_INJECT_FAULTS by the command's setup (stress/fault_spec.h),
  // kept here to outlive the trainer and report at exit.
  stress::InjectedFaults faults;
};

// Adds every flag of `strata train` to `cmd`, parsed into `flags`.
void AddTrainFlags(CLI::App* cmd, TrainFlags* flags);

// Moves what CLI11 parsed into strings and optionals into the TrainOptions.
Status ApplyFlags(TrainFlags& f, const CLI::App& cmd);

}  // namespace strata::tools
