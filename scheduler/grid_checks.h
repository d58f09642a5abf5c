// The grid (--tp, --pp, --split-ops, --shard) against the model, before anything is planned:
// tensor parallelism cuts the model by its description's rules (Note [Tensor-parallel slices] in
// core/nn/tp_layout.h: whole heads, an equal part of the padded vocabulary) and needs the family's
// tensor-parallel ops, a pipeline stage takes at least one block, and what is not built yet with
// them is refused naming the flag.
#pragma once

#include "core/nn/model.h"
#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata {

Status ValidateGridForModel(const TrainOptions& o, const Model& m);

}  // namespace strata
