// Checkpoint records: which NVMe page-store manifests hold the state after which steps, of
// which run, in which store. The record is memory/checkpoint_record.h's, the one the C API's
// checkpoints use too; this file names the trainer's file, its manifests and its fingerprint,
// and words the record's errors with the trainer's flags.
//
// A checkpoint is a manifest of the NVMe page store (storage/page_store.h: a durable snapshot of
// every page's current version, no copy of unchanged pages) plus its entry in this small record,
// <--ckpt-dir>/checkpoint.json (format 2):
//   {"format": 2,
//    "step": 6, "manifest": "step-00000006",     the newest checkpoint (0 and "" when none yet)
//    "run": "<one-line fingerprint>",            RunFingerprint::summary()
//    "checkpoints": [{"step": 6, "manifest": "step-00000006"}, {"step": 4, ...}],  newest first
//    "store_id": "9f2c...",                      the store's id (NvmeTierSnapshots::id)
//    "nvme_dirs": ["/abs/nvme0", ...],           where that store lives
//    "fingerprint": {"--lr": "0.001", ...},      RunFingerprint::to_map(), one for the record
//    "checksum": "<16 hex digits>"}              XXH3-64 of the canonical JSON (sorted keys, no
//                                                spaces) of every other field
// A format-1 record (an older Strata's) has only step, manifest and run; it is read as one
// checkpoint with no store id, fingerprint map or checksum.
//
// Step N is the number of optimizer steps done; the data position and the learning-rate schedule
// are functions of the step (Note [Batch windows] in core/data/token_dataset.h) and training
// draws no random numbers after initialisation, so nothing else is needed to resume exactly.
//
// Note [Checkpoint retirement]
// The record is written atomically (temporary file, fsync, rename, fsync of the directory), only
// after the manifests it lists are durable, and a manifest is deleted only after a durable
// record stops listing it. So a kill at any instant leaves a record whose manifests exist, plus
// perhaps manifests it does not list: a checkpoint saved but not yet recorded, or one retired
// but not yet deleted. Opening the store for --resume deletes every step-* manifest the record
// does not list (CollectUnlisted in scheduler/checkpoint_store.h), so such leftovers never pile
// up and fill the store. A fresh run writes a record with no checkpoints before its first
// manifest, so leftovers of a run killed before its first record are recognised as its own.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/util/status.h"
#include "memory/checkpoint_record.h"

namespace strata::scheduler {

inline constexpr const char* kCheckpointFile = "checkpoint.json";
inline constexpr int kCheckpointFormat = memory::kCheckpointRecordFormat;
// Records above this size are refused unread (a real one is a few KiB).
inline constexpr uint64_t kMaxCheckpointRecordBytes = memory::kMaxCheckpointRecordBytes;

// The trainer's entries are numbered: step and manifest, no name (memory/checkpoint_record.h).
using CheckpointEntry = memory::CheckpointEntry;
using CheckpointRecord = memory::CheckpointRecord;

std::string ManifestNameForStep(long step);
// Whether a manifest name is a checkpoint's (step-*): only those are retired or collected.
bool IsCheckpointManifest(const std::string& name);

// Parses the text of a checkpoint.json (memory::ParseCheckpointRecord). Pure: never throws,
// reads nothing else, allocates only in proportion to `text`. Corruption naming
// `path_for_messages` for text that is not a record (with the field at fault) or whose checksum
// does not match its content; NotSupported for a newer format. The advice names the trainer's
// flags.
Result<CheckpointRecord> ParseCheckpointRecord(std::string_view text,
                                               const std::string& path_for_messages);
// The record's JSON (with its checksum), as WriteCheckpointRecord writes it. The shared one,
// by name (argument-dependent lookup finds it from memory:: too).
using memory::CheckpointRecordJson;

// nullopt when <dir>/checkpoint.json does not exist; ParseCheckpointRecord's errors.
Result<std::optional<CheckpointRecord>> ReadCheckpointRecord(const std::string& dir);
// Creates `dir` if needed; atomic and durable (Note [Checkpoint retirement]).
Status WriteCheckpointRecord(const std::string& dir, const CheckpointRecord& record);

}  // namespace strata::scheduler
