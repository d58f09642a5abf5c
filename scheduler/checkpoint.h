// Checkpoint records: which NVMe page-store manifest holds the state after which step.
//
// A checkpoint is a manifest of the NVMe page store (storage/page_store.h: a durable snapshot of
// every page's current version, no copy of unchanged pages) plus this small record in --ckpt-dir:
// <dir>/checkpoint.json = {"step": N, "manifest": "step-N", "run": "<fingerprint>"}. Step N is
// the number of optimizer steps done; the data position and the learning-rate schedule are
// functions of the step (Note [Batch windows] in core/data/token_dataset.h) and training draws
// no random numbers after initialisation, so nothing else is needed to resume exactly.
//
// The record is written atomically (temporary file, fsync, rename, fsync of the directory) after
// its manifest is durable, and older manifests are deleted only after that: a kill at any instant
// leaves a record naming a manifest that exists.
#pragma once

#include <optional>
#include <string>

#include "core/util/status.h"

namespace strata::scheduler {

inline constexpr const char* kCheckpointFile = "checkpoint.json";

struct CheckpointRecord {
  long step = 0;
  std::string manifest;
  std::string run;  // fingerprint of what must not change across a resume (model, batch, ...)
};

std::string ManifestNameForStep(long step);

// nullopt when <dir>/checkpoint.json does not exist; Corruption when it does not parse.
Result<std::optional<CheckpointRecord>> ReadCheckpointRecord(const std::string& dir);
// Creates `dir` if needed; atomic and durable.
Status WriteCheckpointRecord(const std::string& dir, const CheckpointRecord& record);

}  // namespace strata::scheduler
