// The compute costs --pp-partition auto balances (Note [Stage partition] in pipeline_plan.h),
// measured at start-up as Merak and PipeDream do: one transformer block's forward and backward on
// a micro-batch (every block of a GPT has the same shape, so one stands for all), the
// embedding's and the head's, each the fastest of a few runs on the CPU kernels in a TBB arena of
// `threads`. Also what the first line prints as each stage's predicted time.
#pragma once

#include "core/nn/gpt_layout.h"
#include "scheduler/pipeline_plan.h"

namespace strata::scheduler {

StageCosts MeasureStageCosts(const GptLayout& layout, int micro_rows, int seq, int threads);

}  // namespace strata::scheduler
