// PipeStage: what one pipeline stage of a job runs (docs/parallel.md, "The grid"): its blocks, its
// schedule and the Comms it talks to its neighbours on. Built by the trainer from the grid and
// --pp-partition / --schedule (pipeline_plan.h); read by the Engine (its stage program, Note
// [Stage programs] in step_program.h) and GptOps (the activations it sends and receives).
//
// Three Comms over the stage's pipeline group (rank = stage), each with its own queue, so that no
// message waits behind one of another kind: `fwd` carries the activations forward (stage s sends
// micro-batch m's output to s + 1, which receives it before its first block's forward), `bwd`
// their gradients back (s + 1 sends the gradient of its input, s receives it before its last
// block's backward), `tied` the tied embedding's gradient between the first and the last stage
// and, after the step's compute, the step's loss and gradient norms. On each Comm every stage
// issues its messages in micro-batch order, and the order matches its peers': the pipeline is a
// chain, so no cycle of waits can form.
#pragma once

#include <vector>

#include "parallel/comm.h"
#include "scheduler/pipeline_plan.h"
#include "scheduler/step_program.h"

namespace strata::scheduler {

struct PipeStage {
  int stage = 0, stages = 1;
  StageBlocks blocks;           // its transformer blocks, first / last stage
  std::vector<PipeStep> steps;  // StageSchedule's order of its forwards and backwards
  int in_flight = 1;            // PeakInFlight(steps): activation sets it holds
  parallel::Comm* fwd = nullptr;
  parallel::Comm* bwd = nullptr;
  parallel::Comm* tied = nullptr;

  bool first() const { return stage == 0; }
  bool last() const { return stage == stages - 1; }
  // Transformer layers [first_layer(), first_layer() + layers()) (0-based).
  int first_layer() const { return blocks.first_block - 1; }
  int layers() const { return blocks.last_block - blocks.first_block + 1; }
};

}  // namespace strata::scheduler
