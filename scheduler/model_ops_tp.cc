// ModelOps on a tensor-parallel rank's slice (Note [Tensor-parallel slices] in
// core/nn/tp_layout.h): the same ops, slots and pages as one rank's, computed by the model's
// tensor-parallel rank (Model::tensor_parallel_rank) with the tp group's all-reduces, which run
// here on the compute stream's thread in program order (every rank of the group runs the same
// program, so their collectives match).
#include <chrono>
#include <string>

#include "core/nn/tp_layout.h"
#include "scheduler/grad_norm.h"
#include "scheduler/model_ops.h"

namespace strata::scheduler {

// A failed all-reduce is kept for take_error and the op's later ones are skipped (the Comm is
// broken; each would wait for the timeout again). The step's results are then garbage, and the
// driver fails the step once its compute completed.
void ModelOps::tp_all_reduce(float* data, int64_t count) {
  if (!ops_error_.ok()) return;
  const auto t0 = std::chrono::steady_clock::now();
  k_.finish();  // the all-reduce reads what this launch's kernels wrote
  Status s = o_.tp_comm->all_reduce_sum(data, data, size_t(count)).wait();
  compute_comm_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  keep_error(s, "tensor-parallel all-reduce");
}

double ModelOps::grad_sum_of_squares(int block, const float* grads) const {
  const BlockSpec& spec = layout_.blocks[block];
  const KernelTable& k = k_;
  if (!tensor_parallel()) return BlockGradSumOfSquares(k, spec, grads);
  return TpBlockGradSumOfSquares(k, spec, grads, /*with_replicated=*/o_.tp_comm->rank() == 0);
}

// Each block's sum over the tp group's slices, in rank order (the Comm's deterministic sum), so
// every rank of the group clips with the same norm.
Status ModelOps::finish_grad_sums() {
  STRATA_RETURN_IF_ERROR(ops_error_);
  if (tensor_parallel()) {
    STRATA_RETURN_IF_ERROR(
        o_.tp_comm->all_reduce_sum(block_sums_.data(), block_sums_.data(), block_sums_.size())
            .wait()
            .with_context("summing the gradients' norms over the tensor-parallel group"));
  }
  return piped() ? pipe_finish() : Status::Ok();
}

}  // namespace strata::scheduler
