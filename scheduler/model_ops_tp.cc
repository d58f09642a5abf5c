// ModelOps on a tensor-parallel rank's slice (Note [Tensor-parallel slices] in
// core/nn/tp_layout.h): the same ops, slots and pages as one rank's, computed by
// core/nn/tp_blocks.h and tp_head.h with the tp group's all-reduces on the compute stream's thread,
// in program order (every rank of the group runs the same program, so their collectives match).
#include <chrono>
#include <string>

#include "core/nn/tp_blocks.h"
#include "core/nn/tp_head.h"
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

void ModelOps::compute_tp(const Op& op, const std::vector<float*>& p) {
  const KernelTable& k = k_;
  const GptLayout& layout = *o_.gpt;
  const int B = o_.micro_rows, T = o_.seq, L = n_layer_;
  const int r = o_.tp_comm->rank();
  const TpAllReduce sum = [this](float* data, int64_t n) { tp_all_reduce(data, n); };
  const int32_t* x = tokens_ + int64_t(op.micro_batch) * B * T;
  const int32_t* y = tokens_ + int64_t(o_.batch) * T + int64_t(op.micro_batch) * B * T;
  const float* head_in = block_input(L);
  const int64_t wte = layout.embedding().tensors[kWte].offset;
  const HeadActs head_acts = gpt_head_acts();
  const BackwardScratch scratch = gpt_scratch();
  switch (op.kind) {
    case OpKind::kEmbedFwd:
      TpEmbeddingForward(k, layout, r, p[0], x, B, T, cur_->emb_out, sum);
      break;
    case OpKind::kBlockFwd:
      TpTransformerForward(k, layout, op.block - 1, r, p[0], block_input(op.block - 1), B, T,
                           gpt_acts(op.block - 1), sum);
      break;
    case OpKind::kHeadFwd:
      losses_[op.micro_batch] = TpHeadForward(k, layout, r, p[0], p[1] + wte, head_in, y, B, T,
                                              head_acts, tp_stats_, sum);
      break;
    case OpKind::kHeadBwd:
      TpHeadBackward(k, layout, r, p[0], p[2], p[1] + wte, p[3] + wte, head_in, y, B, T, head_acts,
                     scratch, dloss_, dres_[op.micro_batch],
                     /*first=*/op.micro_batch == 0, sum);
      break;
    case OpKind::kBlockBwd: {
      const int l = op.block - 1;
      if (recomputed(l)) {
        TpTransformerForward(k, layout, l, r, p[0], block_input(l), B, T, gpt_acts(l), sum);
      }
      TpTransformerBackward(k, layout, l, r, p[0], p[1], block_input(l), B, T, gpt_acts(l), scratch,
                            dres_[op.micro_batch], /*first=*/op.micro_batch == 0, sum);
      break;
    }
    case OpKind::kEmbedBwd:
      // As compute's: under data parallelism the embedding's contributions are made apart.
      TpEmbeddingBackward(k, layout, r, embedding_part_ != nullptr ? embedding_part_ : p[0],
                          dres_[op.micro_batch], x, B, T, scratch,
                          /*first_wpe=*/op.micro_batch == 0,
                          /*first_wte=*/embedding_part_ != nullptr && op.micro_batch == 0);
      break;
  }
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
