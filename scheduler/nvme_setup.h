// SetUpNvmeTier: the paged trainer's NVMe tier, opened once before the memory manager. A new
// store is sized to what it must hold (Note [NVMe capacity] in memory/nvme_capacity.h); an
// existing one is the store of the run that --resume continues (or one a run without a
// checkpoint left, started over). It also decides the checkpoint record in force and the
// checkpoint a resume starts from (scheduler/checkpoint_store.h).
//
// Errors say which flag or directory to change: InvalidArgument for flags that contradict the
// --ckpt-dir's record or the store, NotFound for a --resume without its store,
// ResourceExhausted when the disks or --nvme-mem hold less than the minimum, and the store's own
// errors (memory/open_nvme_tier.h).
// Threads: one caller; collective over `world` under --resume with several ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/util/status.h"
#include "memory/nvme_tier.h"
#include "scheduler/checkpoint.h"
#include "scheduler/run_fingerprint.h"
#include "scheduler/train_options.h"

namespace strata::parallel {
class Comm;
}  // namespace strata::parallel

namespace strata::scheduler {

struct NvmeTierInput {
  const BudgetOptions* budgets = nullptr;          // nvme_dirs (not empty) and nvme_mem
  const CheckpointOptions* checkpoints = nullptr;  // dir empty: no checkpoints
  storage::FaultInjector* faults = nullptr;        // TrainOptions::nvme_faults (tests)
  uint64_t page_bytes = 0;
  uint64_t state_pages = 0;    // every page of the run's state
  uint64_t durable_pages = 0;  // the pages a checkpoint holds (parameters and moments)
  uint64_t host_bytes = 0;     // the host pool (the versions it can stage)
  // This run's fingerprint; read only with a checkpoints->dir, then it must be set.
  const RunFingerprint* fingerprint = nullptr;
  parallel::Comm* world = nullptr;  // the job's ranks; nullptr: one rank
};

struct OpenedNvme {
  std::unique_ptr<memory::NvmeTier> tier;
  CheckpointRecord record;  // in force (written before the first step); empty without a dir
  std::optional<CheckpointEntry> resume_from;  // the checkpoint a resume continues from
  // --keep-checkpoints, or the fewer that fit the disks (said in one warning line).
  int keep_checkpoints = 0;
};

Result<OpenedNvme> SetUpNvmeTier(const NvmeTierInput& in);

}  // namespace strata::scheduler
