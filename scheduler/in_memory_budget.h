// What the in-memory trainer (in_memory_trainer.h) needs of the device and of this machine, and
// its refusals when a budget is below that: the trainer factory asks it to choose an engine, the
// trainer before it maps anything.
//
// Errors: both checks return a Status worded below the edges (Note [Options in messages] in
// core/util/option.h) with an OptionFault naming the option to change and the numbers the message
// states.
#pragma once

#include <cstdint>

#include "core/nn/model.h"
#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata {

// Floats of the in-memory trainer's activations for micro-batches of B rows of T tokens, M of
// them on this rank: the embedding's output, every layer's saved activations, the head's, the
// backward's scratch and one residual gradient per micro-batch.
int64_t InMemoryActivationFloats(const Model& m, int B, int T, int M);

// Device bytes the in-memory trainer allocates for `o` with model `m` and seq `T`.
uint64_t InMemoryDeviceBytes(const TrainOptions& o, const Model& m, int T);

// On the sim device the state and activations live in this machine's RAM: ResourceExhausted
// (scheduler/machine_fit.h's refusal) when they cannot fit; OK on any other device.
Status CheckInMemoryFitsMachine(const TrainOptions& o, const Model& m, int T);

// The device budget the in-memory trainer runs in: --gpu-mem, or exactly what it needs when
// --gpu-mem is not given. ResourceExhausted at fault of {gpu_mem} ("got" the budget,
// "need_bytes" InMemoryDeviceBytes) when the budget is below the need. `micro_rows` is the rows
// of one micro-batch, as the message names them.
Result<uint64_t> InMemoryDeviceBudget(const TrainOptions& o, const Model& m, int micro_rows,
                                      int T);

}  // namespace strata
