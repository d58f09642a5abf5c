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
  return residual /*emb_out*/ + int64_t(recompute_layers) * residual +
         int64_t(kept_layers()) * block + (recompute_layers > 0 ? block : 0) /*work*/ + head +
         scratch + int64_t(micro_batches) * residual /*dres*/;
}

ActivationLayout MakeActivationLayout(const GptConfig& config, int micro_rows, int seq,
                                      int recompute_layers, int micro_batches) {
  STRATA_CHECK(micro_rows > 0 && seq > 0 && micro_batches > 0)
      << "micro_rows " << micro_rows << ", seq " << seq << ", micro_batches " << micro_batches;
  STRATA_CHECK(recompute_layers >= 0 && recompute_layers <= config.n_layer)
      << "recompute_layers " << recompute_layers << " of " << config.n_layer;
  ActivationLayout a;
  a.config = config;
  a.micro_rows = micro_rows;
  a.seq = seq;
  a.recompute_layers = recompute_layers;
  a.micro_batches = micro_batches;
  a.residual = Aligned(int64_t(micro_rows) * seq * config.n_embd);
  // gpt_blocks.h rounds each part, so these are multiples of kTensorAlignFloats already.
  a.block = TransformerActsFloats(config, micro_rows, seq);
  a.head = HeadActsFloats(config, micro_rows, seq);
  a.scratch = BackwardScratchFloats(config, micro_rows, seq);
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
  out.emb_out = take(a.residual);
  out.outputs.resize(c.n_layer);
  out.layers.resize(c.n_layer);
  for (int l = 0; l < c.n_layer; ++l) {
    if (a.recomputed(l)) {
      out.outputs[l] = take(a.residual);
    } else {
      out.layers[l] = CarveTransformerActs(c, B, T, take(a.block));
      out.outputs[l] = out.layers[l].out;
    }
  }
  if (a.recompute_layers > 0) out.work = CarveTransformerActs(c, B, T, take(a.block));
  out.head = CarveHeadActs(c, B, T, take(a.head));
  out.scratch = CarveBackwardScratch(c, B, T, take(a.scratch));
  for (int m = 0; m < a.micro_batches; ++m) out.dres.push_back(take(a.residual));
  STRATA_CHECK(cursor - base == a.floats())
      << "the activation carving and its size table disagree: " << cursor - base << " vs "
      << a.floats() << " floats";
  return out;
}

}  // namespace strata::scheduler
