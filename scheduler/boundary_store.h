// BoundaryStore: layer-major's host copy of every micro-batch's block-boundary activations
// (Note [Micro-batch order] in step_program.h). In layer-major order a block runs every
// micro-batch before the next block does, so the input of block l for micro-batch m must wait
// for backward (which rebuilds the block from it) while the other micro-batches pass through the
// same device buffers. The device keeps one micro-batch's boundaries (the activation layout of
// recompute-all); each op copies its input boundary in from here and its output out, on the
// compute stream, so the copies are ordered with the kernels without further Events.
//
// Boundary j of micro-batch m: j = 0 is the embedding's output, j = l + 1 transformer block l's
// output (the input of block l + 1, and the head's for l = L - 1).
//
// One host allocation of micro_batches * (n_layer + 1) residuals, registered with the device for
// its copies (pinned on CUDA), counted in --host-mem (MemoryPlan::boundary_store_bytes).
// Threads: the pointers are handed to copies on the compute stream; no state changes after
// Create.
#pragma once

#include <cstdint>
#include <memory>

#include "core/device/device.h"
#include "core/util/status.h"

namespace strata::scheduler {

class BoundaryStore {
 public:
  // `residual_floats`: the stride of one boundary (ActivationLayout::residual).
  static Result<std::unique_ptr<BoundaryStore>> Create(Device& device, int micro_batches,
                                                       int boundaries, int64_t residual_floats);
  ~BoundaryStore();
  BoundaryStore(const BoundaryStore&) = delete;
  BoundaryStore& operator=(const BoundaryStore&) = delete;

  float* at(int micro_batch, int boundary) const;
  uint64_t bytes() const { return uint64_t(count_) * residual_ * sizeof(float); }

 private:
  BoundaryStore(Device& device, int micro_batches, int boundaries, int64_t residual_floats);

  Device& device_;
  const int micro_batches_, boundaries_;
  const int64_t residual_;
  const int64_t count_;
  float* data_ = nullptr;
  bool registered_ = false;
};

}  // namespace strata::scheduler
