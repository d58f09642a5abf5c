// --export-dir: the final weights as a Hugging Face model directory (config.json beside
// model.safetensors) that --init reads back. Both trainers call these around their export of
// OutputOptions::export_path, which CreateTrainer points into the directory.
#pragma once

#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata::scheduler {

// Creates --export-dir (its parent must exist; checked by the CLI) before the weights are
// written; nothing when it is not given. IoError naming the flag and the path.
Status PrepareExportDir(const OutputOptions& outputs);

// Writes export_config as the directory's config.json, durably, after the weights: a directory
// with a config.json is a complete one. Nothing when --export-dir is not given.
Status WriteExportConfig(const OutputOptions& outputs);

}  // namespace strata::scheduler
