// BlockOps: the model-specific half of a step — what each compute op of the step program does
// with the device slots it was given. The Engine (the driver) knows blocks, slots and pages but
// no model; an implementation knows the model's kernels and owns its device buffers (the step's
// inputs, activations, scratch). ModelOps (model_ops.h) runs any model behind core/nn/model.h.
//
// Threads: Run on the compute stream's thread, in program order; the accessors from the driver
// after the step's compute has completed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device/device.h"
#include "core/util/status.h"
#include "scheduler/step_program.h"

namespace strata::scheduler {

class BlockOps {
 public:
  virtual ~BlockOps() = default;
  // Bytes of a device slot of the block: its parameters (= its gradient) in its contiguous
  // layout, gathered whole when sharded (Note [Shards] in shard_plan.h).
  virtual uint64_t block_bytes(int block) const = 0;
  // Bytes of a device slot holding the block's `role`: a split block's parameters take less than
  // its gradient (Note [Split operators] in split_plan.h).
  virtual uint64_t slot_bytes(int block, SlotRole /*role*/) const { return block_bytes(block); }
  // Whether the block's state is sharded over the ranks: its slot is gathered after each load.
  virtual bool sharded(int /*block*/) const { return false; }
  // The step whose ops run next (for the timeline of what the ops move themselves).
  virtual void set_step(long /*step*/) {}
  // The first failure of what the ops moved themselves (a split block's slice gathers) since the
  // last call; OK when none. The driver calls it once the step's compute has completed.
  virtual Status take_error() { return Status::Ok(); }
  // The device buffer of the step's inputs and targets (batch*seq of each, int32) and its size.
  virtual int32_t* tokens() = 0;
  virtual uint64_t tokens_count() const = 0;
  // Runs `op`'s kernels; slots[i] holds op.uses[i]. Zeroes the gradient slots the op starts in
  // micro-batch 0, and records the loss and the final gradients' sums of squares.
  virtual void run(const Op& op, const std::vector<float*>& slots) = 0;
  // Copies of activations the op needs before its kernels and keeps after them (layer-major's
  // boundaries, boundary_store.h), enqueued on `stream` (the compute stream) around run(). The
  // driver calls them; errors are the device's.
  virtual Status stage_in(const Op& /*op*/, Stream& /*stream*/) { return Status::Ok(); }
  virtual Status stage_out(const Op& /*op*/, Stream& /*stream*/) { return Status::Ok(); }
  // Data parallelism: sums block `block`'s final gradient, in the device slot `slot`, over the
  // ranks (Note [Data-parallel gradients] in data_parallel.h) and records its sum of squares.
  // The driver runs it on its comm stream after the op that finished the gradient.
  // A sharded block's gradient is reduce-scattered: the slot then holds this rank's shard of the
  // sum at its place, which is all that goes down.
  virtual Status reduce_grad(int /*block*/, float* /*slot*/) { return Status::Ok(); }
  // Sharded blocks: fills the rest of the slot around this rank's uploaded shard (an in-place
  // all-gather). The driver runs it on its comm stream after the load.
  virtual Status gather_params(int /*block*/, float* /*slot*/) { return Status::Ok(); }
  // After the step's compute: each micro-batch's loss, and each block's gradient sum of squares.
  virtual const std::vector<float>& losses() const = 0;
  virtual const std::vector<double>& grad_sums() const = 0;
  // Before grad_sums() is read, after the step's compute and collectives: sums this rank's parts
  // of the blocks' sums of squares with the ranks that hold the other parts (a tensor-parallel
  // group's slices). Collective where it sums.
  virtual Status finish_grad_sums() { return Status::Ok(); }
  // Seconds the ops waited in collectives they ran themselves (tp all-reduces, pipeline
  // receives) since the last call; read after the step's compute.
  virtual double take_compute_comm_s() { return 0; }
};

}  // namespace strata::scheduler
