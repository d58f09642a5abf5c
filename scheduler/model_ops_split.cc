// ModelOps's split operators (Note [Split operators] in split_plan.h): a split block's weights
// gathered slice by slice into the model's split ops.
#include <utility>
#include <vector>

#include "scheduler/model_ops.h"

namespace strata::scheduler {

// A split block (Note [Split operators] in split_plan.h): its split tensors slice by slice, through
// the model's split ops; a recomputed layer's output copied as layer_forward copies it.
void ModelOps::compute_split(const Op& op, const std::vector<float*>& p) {
  const KernelTable& k = k_;
  const OpShape s = op_shape();
  const int l = op.block - 1;
  const SplitWeights w = split_weights(op, p[0]);
  float* acts = acts_for(l);
  if (op.kind == OpKind::kBlockFwd || recomputed(l)) {
    model_.layer_forward_split(k, s, l, w, block_input(l), acts);
  }
  if (op.kind == OpKind::kBlockFwd) {
    if (recomputed(l)) {
      k.copy(cur_->outputs[l], model_.layer_output(s, acts),
             long(int64_t(s.B) * s.T * model_.shape().n_embd));
    }
    return;
  }
  model_.layer_backward_split(k, s, l, w, p[1], block_input(l), acts, scratch_,
                              dres_[op.micro_batch], /*first=*/op.micro_batch == 0);
}

// Note [Split operators]: the rest of the block, not the MLP weights (the op gathers those slice
// by slice), its owners' pieces broadcast in rank order.
Status ModelOps::gather_split_params(int block, float* slot) {
  std::vector<parallel::CommWork> works;
  for (int r = 0; r < o_.comm->size(); ++r) {
    const auto [begin, end] = o_.split->rest_range(block, r);
    if (begin < end) works.push_back(o_.comm->broadcast(slot + begin, size_t(end - begin) * 4, r));
  }
  for (const parallel::CommWork& w : works) STRATA_RETURN_IF_ERROR(w.wait());
  return Status::Ok();
}

SplitWeights ModelOps::split_weights(const Op& op, const float* slot) {
  const int b = op.block, slices = o_.split->factor(b);
  const BlockSpec& spec = layout_.blocks[b];
  const std::vector<int> split = SplitTensors(spec);
  SplitWeights w;
  w.tensor.assign(spec.tensors.size(), nullptr);
  for (size_t t = 0; t < spec.tensors.size(); ++t) {
    if (spec.tensors[t].split) continue;  // given slice by slice
    w.tensor[t] = slot + o_.split->param_slot_offset(b, int(t), spec.tensors[t].offset);
  }
  // The order the ops ask (core/nn/split_weights.h): forward in layout order, backward reversed.
  std::vector<std::pair<int, int>> order;
  auto add = [&](int tensor) {
    for (int s = 0; s < slices; ++s) order.emplace_back(tensor, s);
  };
  if (op.kind == OpKind::kBlockFwd || recomputed(b - 1)) {
    for (int t : split) add(t);
  }
  if (op.kind == OpKind::kBlockBwd) {
    for (auto t = split.rbegin(); t != split.rend(); ++t) add(*t);
  }
  w.slices = slices;
  SliceGather* gather = slices_.get();
  gather->begin(b, slot, std::move(order), step_);
  w.slice = [gather](int tensor, int s) { return gather->next(tensor, s); };
  return w;
}

}  // namespace strata::scheduler
