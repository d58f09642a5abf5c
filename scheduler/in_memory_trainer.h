// The in-memory trainer: every byte of state in device memory, any model through the model
// interface (core/nn/model.h), in the one step order every model shares. It is the reference that
// every offloaded configuration must reproduce bit for bit (Note [Canonical arithmetic] in
// scheduler/trainer.h). Under data parallelism (--dp, --shard none) each rank holds the whole state
// and sums its gradients with the others (scheduler/data_parallel.h).
//
// Threads: as Trainer.
#pragma once

#include <cstdint>
#include <memory>

#include "core/data/token_dataset.h"
#include "core/nn/model.h"
#include "scheduler/train_options.h"
#include "scheduler/trainer.h"

namespace strata {

// `options` are validated by CreateTrainer (trainer_factory.h); `seq` resolved; `data` checked for
// the window. Refuses a run too big for the machine (sim) or for --gpu-mem before it allocates
// (in_memory_budget.h).
Result<std::unique_ptr<Trainer>> CreateInMemoryTrainer(const TrainOptions& options,
                                                       std::unique_ptr<Model> model, int seq,
                                                       TokenDataset data);

}  // namespace strata
