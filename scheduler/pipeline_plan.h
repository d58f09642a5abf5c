// Pipeline parallelism's plan (issue 15, docs/parallel.md "The grid"): which blocks each stage
// owns (--pp-partition) and the order in which a stage runs its micro-batches' forwards and
// backwards (--schedule). Pure functions; pipe_stage.h and the stage programs of step_program.h
// run them.
//
// Note [Pipeline schedules]
// A stage s of P runs M micro-batches' forwards F0..F(M-1) and backwards B0..B(M-1), each in
// micro-batch order, so a stage's gradient is the left fold of its micro-batches in order (Note
// [Gradient contributions]) and a pp run gives one rank's bits.
// - GPipe: every forward, then every backward. A stage holds the activations of all M
//   micro-batches at once.
// - 1F1B (PipeDream-Flush): P-s-1 forwards to fill the pipe, then one forward and one backward
//   in turn, then the remaining backwards. A stage holds at most P-s micro-batches' activations,
//   whatever M.
//
// Note [Stage partition]
// Stages own contiguous ranges of transformer blocks, at least one each; the embedding runs on
// stage 0 and the head on stage P-1. `uniform` gives every stage L/P blocks (the first L%P stages
// one more); `auto` (Merak, PipeDream) minimises the slowest stage's predicted time, from each
// block's measured time plus the embedding's and the head's, by dynamic programming over the
// contiguous cuts; `N0,N1,...` gives the counts.
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata::scheduler {

enum class PipeSchedule { kGPipe, k1F1B };
// "gpipe" | "1f1b"; InvalidArgument otherwise.
Result<PipeSchedule> ParsePipeSchedule(const std::string& text);

struct PipeStep {
  bool forward = true;
  int micro_batch = 0;
  bool operator==(const PipeStep&) const = default;
};

// Stage `stage`'s order of forwards and backwards (Note [Pipeline schedules]).
std::vector<PipeStep> StageSchedule(PipeSchedule schedule, int stages, int stage,
                                    int micro_batches);
// The most micro-batches whose forward ran and backward did not, at any point of `steps`.
int PeakInFlight(const std::vector<PipeStep>& steps);

// Times in seconds for --pp-partition auto: each transformer block's, and the embedding's and
// the head's (run on the first and the last stage).
struct StageCosts {
  std::vector<double> blocks;
  double embedding = 0, head = 0;
};

// Blocks per stage for --pp-partition `text` (Note [Stage partition]); `costs` is read for auto
// only. InvalidArgument, naming the flag, for a text that is none of the forms, a list that is not
// `stages` positive counts adding up to `layers`, or more stages than blocks.
Result<std::vector<int>> PartitionStages(const std::string& text, int stages, int layers,
                                         const StageCosts& costs = {});
// Each stage's predicted time under `counts` (its blocks, plus the embedding on the first and the
// head on the last).
std::vector<double> StageTimes(const std::vector<int>& counts, const StageCosts& costs);

}  // namespace strata::scheduler
