// ModelOps's path that slices GPT-2's blocks alone (model_ops.h): split operators (Note [Split
// operators] in split_plan.h), and the activations it computes in.
#include <utility>
#include <vector>

#include "scheduler/model_ops.h"

namespace strata::scheduler {

TransformerActs ModelOps::gpt_acts(int layer) const {
  TransformerActs a = CarveTransformerActs(o_.gpt->config, o_.micro_rows, o_.seq, acts_for(layer));
  if (recomputed(layer)) a.out = cur_->outputs[layer];  // rebuilt in place: the same bits
  return a;
}

BackwardScratch ModelOps::gpt_scratch() const {
  return CarveBackwardScratch(o_.gpt->config, o_.micro_rows, o_.seq, scratch_);
}

// A split GPT-2 block (Note [Split operators] in split_plan.h): its MLP weights slice by slice.
void ModelOps::compute_split(const Op& op, const std::vector<float*>& p) {
  const KernelTable& k = k_;
  const int B = o_.micro_rows, T = o_.seq, l = op.block - 1;
  const TransformerWeights w = split_weights(op, p[0]);
  if (op.kind == OpKind::kBlockFwd) {
    TransformerForward(k, *o_.gpt, l, w, block_input(l), B, T, gpt_acts(l));
    return;
  }
  if (recomputed(l)) TransformerForward(k, *o_.gpt, l, w, block_input(l), B, T, gpt_acts(l));
  TransformerBackward(k, *o_.gpt, l, w, p[1], block_input(l), B, T, gpt_acts(l), gpt_scratch(),
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

TransformerWeights ModelOps::split_weights(const Op& op, const float* slot) {
  const int b = op.block, slices = o_.split->factor(b);
  const BlockSpec& spec = layout_.blocks[b];
  TransformerWeights w;
  for (int t = 0; t < kTransformerTensors; ++t) {
    if (t == kFcW || t == kFcProjW) continue;  // kSplitTensors: given slice by slice
    w.tensor[t] = slot + o_.split->param_slot_offset(b, t, spec.tensors[t].offset);
  }
  // The order the kernels ask (gpt_blocks.h): forward c_fc then c_proj, backward the reverse.
  std::vector<std::pair<int, int>> order;
  auto add = [&](int tensor) {
    for (int s = 0; s < slices; ++s) order.emplace_back(tensor, s);
  };
  if (op.kind == OpKind::kBlockFwd || recomputed(b - 1)) {
    add(kFcW);
    add(kFcProjW);
  }
  if (op.kind == OpKind::kBlockBwd) {
    add(kFcProjW);
    add(kFcW);
  }
  w.slices = slices;
  SliceGather* gather = slices_.get();
  gather->begin(b, slot, std::move(order), step_);
  w.slice = [gather](int tensor, int s) { return gather->next(tensor, s); };
  return w;
}

}  // namespace strata::scheduler
