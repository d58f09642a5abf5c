// The compute costs --pp-partition auto balances (Note [Stage partition] in pipeline_plan.h),
// measured at start-up as Merak and PipeDream do: one layer's forward and backward on a
// micro-batch (every layer of the models Strata trains has the same shape, so one stands for
// all), the embedding's and the head's, each the fastest of a few runs through the model's ops on
// the CPU kernels in a TBB arena of `threads`. Also what the first line prints as each stage's
// predicted time.
#pragma once

#include "core/nn/model.h"
#include "scheduler/pipeline_plan.h"

namespace strata::scheduler {

StageCosts MeasureStageCosts(const Model& model, int micro_rows, int seq, int threads);

}  // namespace strata::scheduler
