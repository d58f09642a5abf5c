// SliceGather: gathers the slices of a split block's MLP weights while the block's op computes
// (Note [Split operators] in split_plan.h), into two device buffers: the slice after the one in
// use is gathered while that one computes.
//
// A slice is gathered on a device stream of its own ("slices"): each owner first copies its piece
// from its parameter slot into the buffer, then the owners' pieces are broadcast in rank order on
// the Comm given here. That Comm is the job's second one (a duplicate communicator), used only
// from this stream, so its collectives come in program order on every rank and never interleave
// with the engine's gathers and reductions on the first.
//
// Reuse: a buffer is gathered into again two slices later. On the sim device the kernels that
// read it have finished by then; on a GPU they may only be enqueued, so every gather first waits
// for the compute stream's kernels (KernelTable::finish; correct, and a serialization point the
// GPU pays until the reuse is ordered by events).
//
// Threads: begin, next and finish from the compute stream's thread (inside an op), in program
// order.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/device/device.h"
#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/split_plan.h"
#include "scheduler/trace.h"

namespace strata::scheduler {

class SliceGather {
 public:
  // `buffers`: two device buffers of plan.slice_buffer_floats() floats each; `kernels`: the
  // table the compute stream's ops run (its finish orders a buffer's reuse).
  SliceGather(Device& device, const KernelTable& kernels, parallel::Comm& comm,
              const SplitPlan& plan, std::pair<float*, float*> buffers, Timeline* timeline);
  ~SliceGather();

  // An op of step `step` on split block `block`, whose parameter slot is `slot`, will ask for the
  // slices (tensor, slice) in `order`: the first one's gather starts now.
  void begin(int block, const float* slot, std::vector<std::pair<int, int>> order, long step);
  // The next slice of the order, which must be (tensor, slice): waits for its gather and starts the
  // one after it. After a failed gather the buffer holds whatever it held (the op computes on, and
  // the error is the step's: take_error).
  const float* next(int tensor, int slice);
  // The first failure since the last call (OK when none); waits for the gathers in flight.
  Status take_error();

 private:
  void issue(size_t i);

  Device& device_;
  const KernelTable& kernels_;
  parallel::Comm& comm_;
  const SplitPlan& plan_;
  float* buffers_[2];
  Timeline* timeline_;
  std::unique_ptr<Stream> stream_;

  int block_ = -1;
  const float* slot_ = nullptr;
  long step_ = 0;
  std::vector<std::pair<int, int>> order_;
  std::vector<std::shared_ptr<Event>> ready_;  // per slice of the order, once issued
  size_t next_ = 0;

  std::mutex mu_;
  Status error_;  // the first failed broadcast (guarded by mu_)
};

}  // namespace strata::scheduler
