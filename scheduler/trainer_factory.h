// CreateTrainer: validates a run's options and makes the trainer that runs them, the in-memory
// reference (scheduler/in_memory_trainer.h) or the paged trainer (scheduler/paged_trainer.h).
// The one file that includes both trainers; they include only the interface
// (scheduler/trainer.h) and the options (scheduler/train_options.h), so no arrow runs back up.
//
// Threads: as Trainer.
#pragma once

#include <memory>

#include "core/util/option.h"
#include "core/util/status.h"
#include "scheduler/train_options.h"
#include "scheduler/trainer.h"

namespace strata {

// The options that only the paged trainer has: any of them selects it under --engine auto.
inline constexpr Option kPagingOptions[] = {
    Option::kHostMem,         Option::kNvmeDir,      Option::kNvmeMem,
    Option::kPageSize,        Option::kParamsOn,     Option::kOptimizerOn,
    Option::kMicroBatch,      Option::kRecompute,    Option::kTrace,
    Option::kCkptDir,         Option::kCkptEvery,    Option::kResume,
    Option::kDelayedUpdate,   Option::kMovementOnly, Option::kHostEviction,
    Option::kKeepCheckpoints, Option::kResumeFrom,   Option::kMicroBatchOrder,
    Option::kDiscardNewer};

// Validates everything (shape, data, sizes, budget) before any step; the Status says which
// flag or file is wrong. InvalidArgument for bad flags, other codes for files/resources.
Result<std::unique_ptr<Trainer>> CreateTrainer(const TrainOptions& options);

}  // namespace strata
