#include "scheduler/activations.h"

#include "core/nn/gpt_layout.h"
#include "core/util/check.h"

namespace strata::scheduler {
namespace {

int64_t Aligned(int64_t floats) {
  return (floats + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
}

}  // namespace

int64_t ActivationLayout::floats() const {
  const int64_t set = residual /*emb_out*/ + int64_t(recompute_layers) * residual +
                      int64_t(kept_layers()) * block;
  return int64_t(in_flight) * set + (recompute_layers > 0 ? block : 0) /*work*/ +
         (with_head ? head : 0) + scratch + int64_t(micro_batches) * residual /*dres*/;
}

ActivationLayout MakeActivationLayout(const GptConfig& config, int micro_rows, int seq,
                                      int recompute_layers, int micro_batches,
                                      const ActivationStage& stage) {
  const int layers = stage.layers >= 0 ? stage.layers : config.n_layer - stage.first_layer;
  STRATA_CHECK(micro_rows > 0 && seq > 0 && micro_batches > 0 && stage.in_flight > 0)
      << "micro_rows " << micro_rows << ", seq " << seq << ", micro_batches " << micro_batches
      << ", in flight " << stage.in_flight;
  STRATA_CHECK(stage.first_layer >= 0 && layers >= 0 && stage.first_layer + layers <= config.n_layer)
      << "layers [" << stage.first_layer << ", +" << layers << ") of " << config.n_layer;
  STRATA_CHECK(recompute_layers >= 0 && recompute_layers <= layers)
      << "recompute_layers " << recompute_layers << " of " << layers;
  ActivationLayout a;
  a.config = config;
  a.micro_rows = micro_rows;
  a.seq = seq;
  a.recompute_layers = recompute_layers;
  a.micro_batches = micro_batches;
  a.first_layer = stage.first_layer;
  a.layers = layers;
  a.in_flight = stage.in_flight;
  a.with_head = stage.with_head;
  a.tp = stage.tp;
  a.residual = Aligned(int64_t(micro_rows) * seq * config.n_embd);
  // gpt_blocks.h rounds each part, so these are multiples of kTensorAlignFloats already.
  a.block = TransformerActsFloats(config, micro_rows, seq, a.tp);
  a.head = HeadActsFloats(config, micro_rows, seq, a.tp);
  a.scratch = BackwardScratchFloats(config, micro_rows, seq, a.tp);
  return a;
}

Activations CarveActivations(const ActivationLayout& a, float* base) {
  const GptConfig& c = a.config;
  const int B = a.micro_rows, T = a.seq;
  float* cursor = base;
  auto take = [&cursor](int64_t floats) {
    float* p = cursor;
    cursor += floats;
    return p;
  };
  Activations out;
  for (int k = 0; k < a.in_flight; ++k) {
    ActivationSet set;
    set.emb_out = take(a.residual);
    set.outputs.assign(c.n_layer, nullptr);
    set.layers.assign(c.n_layer, TransformerActs{});
    for (int l = a.first_layer; l < a.first_layer + a.layers; ++l) {
      if (a.recomputed(l)) {
        set.outputs[l] = take(a.residual);
      } else {
        set.layers[l] = CarveTransformerActs(c, B, T, take(a.block), a.tp);
        set.outputs[l] = set.layers[l].out;
      }
    }
    out.sets.push_back(std::move(set));
  }
  if (a.recompute_layers > 0) out.work = CarveTransformerActs(c, B, T, take(a.block), a.tp);
  if (a.with_head) out.head = CarveHeadActs(c, B, T, take(a.head), a.tp);
  out.scratch = CarveBackwardScratch(c, B, T, take(a.scratch), a.tp);
  for (int m = 0; m < a.micro_batches; ++m) out.dres.push_back(take(a.residual));
  STRATA_CHECK(cursor - base == a.floats())
      << "the activation carving and its size table disagree: " << cursor - base << " vs "
      << a.floats() << " floats";
  out.emb_out = out.sets[0].emb_out;
  out.outputs = out.sets[0].outputs;
  out.layers = out.sets[0].layers;
  return out;
}

}  // namespace strata::scheduler
