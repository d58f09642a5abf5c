// PipeStage: what one pipeline stage of a job runs (docs/parallel.md, "The grid"): its blocks, its
// schedule and the Comms it talks to its neighbours on. Built by the trainer from the grid and
// --pp-partition / --schedule (pipeline_plan.h); read by the Engine (its stage program, Note
// [Stage programs] in step_program.h) and ModelOps (the activations it sends and receives).
//
// Five Comms over the stage's pipeline group (rank = stage), each with its own queue (a Comm runs
// its ops one at a time, in order), so that no message waits behind one of another kind or
// another link: fwd[s % 2] carries the activations from stage s to s + 1 (micro-batch m's output,
// received before s + 1's first block's forward), bwd[s % 2] their gradients from s + 1 back to s
// (received before s's last block's backward), `tied` the tied embedding's gradient between the
// first and the last stage and, after the step's compute, the step's loss and gradient norms. A
// stage's two links use different Comms (s % 2 and (s - 1) % 2), and on each link both ends issue
// their messages in micro-batch order: no cycle of waits can form (with one Comm for both
// directions, 1F1B's stage s sending micro-batch m+1 forward while s + 1 sends m's gradient back
// would wait on each other).
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
  parallel::Comm* fwd[2] = {nullptr, nullptr};
  parallel::Comm* bwd[2] = {nullptr, nullptr};
  parallel::Comm* tied = nullptr;

  // The Comms of the link to the next stage and of the link from the previous one.
  parallel::Comm* fwd_out() const { return fwd[stage % 2]; }
  parallel::Comm* fwd_in() const { return fwd[(stage + 1) % 2]; }
  parallel::Comm* bwd_in() const { return bwd[stage % 2]; }
  parallel::Comm* bwd_out() const { return bwd[(stage + 1) % 2]; }
  bool first() const { return stage == 0; }
  bool last() const { return stage == stages - 1; }
  // Transformer layers [first_layer(), first_layer() + layers()) (0-based).
  int first_layer() const { return blocks.first_block - 1; }
  int layers() const { return blocks.last_block - blocks.first_block + 1; }
};

}  // namespace strata::scheduler
