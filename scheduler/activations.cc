#include "scheduler/activations.h"

#include "core/util/check.h"

namespace strata::scheduler {
namespace {

int64_t Aligned(int64_t floats) {
  return (floats + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
}

}  // namespace

ActivationSizes StepActivationSizes(const Model& model, int B, int T) {
  return {.residual = ResidualFloats(model.shape(), B, T),
          .block = model.layer_acts_floats(B, T),
          .head = model.head_acts_floats(B, T),
          .scratch = model.scratch_floats(B, T)};
}

LayerOutputOf StepLayerOutputOf(const Model& model, int B, int T) {
  return [&model, B, T](float* acts) {
    return const_cast<float*>(model.layer_output({.B = B, .T = T}, acts));
  };
}

int64_t ActivationLayout::floats() const {
  const int64_t set = residual /*emb_out*/ + int64_t(recompute_layers) * residual +
                      int64_t(kept_layers()) * block;
  return int64_t(in_flight) * set + (recompute_layers > 0 ? block : 0) /*work*/ +
         (with_head ? head : 0) + scratch + int64_t(micro_batches) * residual /*dres*/;
}

ActivationLayout MakeActivationLayout(const ActivationSizes& sizes, int n_layer, int micro_rows,
                                      int seq, int recompute_layers, int micro_batches,
                                      const ActivationStage& stage) {
  const int layers = stage.layers >= 0 ? stage.layers : n_layer - stage.first_layer;
  STRATA_CHECK(micro_rows > 0 && seq > 0 && micro_batches > 0 && stage.in_flight > 0)
      << "micro_rows " << micro_rows << ", seq " << seq << ", micro_batches " << micro_batches
      << ", in flight " << stage.in_flight;
  STRATA_CHECK(stage.first_layer >= 0 && layers >= 0 && stage.first_layer + layers <= n_layer)
      << "layers [" << stage.first_layer << ", +" << layers << ") of " << n_layer;
  STRATA_CHECK(recompute_layers >= 0 && recompute_layers <= layers)
      << "recompute_layers " << recompute_layers << " of " << layers;
  for (int64_t n : {sizes.residual, sizes.block, sizes.head, sizes.scratch}) {
    STRATA_CHECK(n >= 0 && n % kTensorAlignFloats == 0)
        << "an activation piece of " << n << " floats is not aligned";
  }
  ActivationLayout a;
  a.n_layer = n_layer;
  a.micro_rows = micro_rows;
  a.seq = seq;
  a.recompute_layers = recompute_layers;
  a.micro_batches = micro_batches;
  a.first_layer = stage.first_layer;
  a.layers = layers;
  a.in_flight = stage.in_flight;
  a.with_head = stage.with_head;
  a.tp = stage.tp;
  a.residual = Aligned(sizes.residual);
  a.block = sizes.block;
  a.head = sizes.head;
  a.scratch = sizes.scratch;
  return a;
}

ActivationLayout MakeActivationLayout(const Model& model, int micro_rows, int seq,
                                      int recompute_layers, int micro_batches,
                                      const ActivationStage& stage) {
  return MakeActivationLayout(StepActivationSizes(model, micro_rows, seq), model.shape().n_layer,
                              micro_rows, seq, recompute_layers, micro_batches, stage);
}

Activations CarveActivations(const ActivationLayout& a, float* base,
                             const LayerOutputOf& output_of) {
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
    set.outputs.assign(a.n_layer, nullptr);
    set.layers.assign(a.n_layer, nullptr);
    for (int l = a.first_layer; l < a.first_layer + a.layers; ++l) {
      if (a.recomputed(l)) {
        set.outputs[l] = take(a.residual);
      } else {
        set.layers[l] = take(a.block);
        set.outputs[l] = output_of(set.layers[l]);
      }
    }
    out.sets.push_back(std::move(set));
  }
  if (a.recompute_layers > 0) out.work = take(a.block);
  if (a.with_head) out.head = take(a.head);
  out.scratch = take(a.scratch);
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
