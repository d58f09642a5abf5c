// The paged trainer: Trainer (scheduler/trainer.h) over the Engine. It builds the page plan, the
// memory plan (budgets, placement), the sim device capped at --gpu-mem, the NVMe page store under
// --nvme-dir, the MemoryManager (host pool of --host-mem), writes the initial parameters into
// their pages, and runs the Engine step by step, reporting moved bytes, overlap and per-tier peaks.
//
// Threads: as Trainer.
#pragma once

#include <memory>

#include "core/data/token_dataset.h"
#include "core/nn/model.h"
#include "scheduler/train_options.h"
#include "scheduler/trainer.h"

namespace strata {

// `options` are validated by CreateTrainer (trainer_factory.h); `seq` resolved; `data` checked for
// the window.
Result<std::unique_ptr<Trainer>> CreatePagedTrainer(const TrainOptions& options,
                                                    std::unique_ptr<Model> model, int seq,
                                                    TokenDataset data);

}  // namespace strata
