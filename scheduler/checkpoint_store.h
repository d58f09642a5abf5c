// Checkpoints over their NVMe store: what --resume (scheduler/paged_trainer_checkpoint.cc) and
// `strata ckpt` (tools/cmd_ckpt.cc) do with a checkpoint record (scheduler/checkpoint.h) and the
// store whose manifests it lists.
//
// Every function runs on one thread, before training or instead of it, with the store opened
// through memory::NvmeTierSnapshots (its normal open path and lock). Errors name the
// --ckpt-dir, the --nvme-dir and the checkpoints, and say what to do; InvalidArgument where a
// flag is at fault (exit 2), Corruption / NotFound where a file is.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "memory/open_nvme_tier.h"
#include "scheduler/checkpoint.h"
#include "scheduler/run_fingerprint.h"

namespace strata::scheduler {

// InvalidArgument naming the first flag whose value differs from the checkpointed run's (a
// format-1 record: its one-line "run" text).
Status CheckRecordIsOfRun(const CheckpointRecord& record, const RunFingerprint& now,
                          const std::string& ckpt_dir);

// Ok when `found` (the --ckpt-dir's record, if any) lists a checkpoint to resume from; else
// InvalidArgument saying there is none and what to do: --resume never starts a run.
Status CheckResumable(const std::optional<CheckpointRecord>& found, const std::string& ckpt_dir);

// InvalidArgument when the record belongs to another store than `store_id` (a format-1 record
// names none and passes).
Status CheckStoreId(const CheckpointRecord& record, const std::string& store_id,
                    const std::string& ckpt_dir, const std::string& nvme_dir);

// The step-* snapshots of the store.
Result<std::vector<std::string>> CheckpointManifests(memory::NvmeTierSnapshots& store);

// Deletes every step-* snapshot that `record` does not list (Note [Checkpoint retirement]);
// returns their names.
Result<std::vector<std::string>> CollectUnlisted(memory::NvmeTierSnapshots& store,
                                                 const CheckpointRecord& record);

struct ResumeRequest {
  std::string ckpt_dir;
  std::string nvme_dir;   // the first --nvme-dir, for messages
  long resume_from = -1;  // --resume-from STEP; -1: the newest checkpoint
  // The checkpoints newer than resume_from may be dropped (--discard-newer, or a step the ranks
  // agreed on: a newer one some rank lacks was never the job's). Else such a resume is refused.
  bool discard_newer = false;
  // --resume: refused when there is no checkpoint to continue (CheckResumable); else a fresh start
  // on the store is allowed.
  bool must_resume = true;
};

struct ResumePlan {
  CheckpointRecord record;              // the record now in force (written, durable)
  std::optional<CheckpointEntry> from;  // the checkpoint restored; nullopt: a fresh start
};

// --resume over an opened store: checks that `found` (the --ckpt-dir's record, if any) belongs
// to this store, chooses the checkpoint (the newest, or --resume-from: refused when newer ones
// are listed, unless request.discard_newer), verifies every page version of it, writes the record
// this run continues (`fresh`'s fields with the checkpoints up to the chosen one), collects
// unlisted manifests, and restores the chosen one. A fresh start on the store (a new run over a
// store that holds no checkpoint) when `found` lists none; refused when the store holds
// checkpoints the record does not know of (a mistyped --ckpt-dir). `fresh` is this run's record
// with no checkpoints.
Result<ResumePlan> PlanResume(memory::NvmeTierSnapshots& store,
                              const std::optional<CheckpointRecord>& found, CheckpointRecord fresh,
                              const ResumeRequest& request);

// Opens the store a record lists (or `dirs` when not empty: the directories moved).
Result<std::unique_ptr<memory::NvmeTierSnapshots>> OpenRecordStore(const CheckpointRecord& record,
                                                                   const std::string& ckpt_dir,
                                                                   std::vector<std::string> dirs);

struct CheckpointListing {
  CheckpointEntry entry;
  bool present = false;       // the store holds its manifest
  memory::SnapshotSize size;  // of its manifest, when present
};
Result<std::vector<CheckpointListing>> ListCheckpoints(memory::NvmeTierSnapshots& store,
                                                       const CheckpointRecord& record);

struct PruneResult {
  std::vector<CheckpointEntry> dropped;
  uint64_t freed_bytes = 0;  // slot bytes no checkpoint or current page holds any more
};
// Keeps the `keep` newest checkpoints: writes the shortened record first, then deletes the
// dropped manifests (and any unlisted step-* one). InvalidArgument for keep < 1.
Result<PruneResult> PruneCheckpoints(memory::NvmeTierSnapshots& store, CheckpointRecord& record,
                                     const std::string& ckpt_dir, int keep);

}  // namespace strata::scheduler
