#include "models/gpt2/gpt_model.h"

#include <algorithm>

#include "core/nn/tp_layout.h"
#include "core/util/check.h"
#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_weights.h"
#include "models/gpt2/tp_head.h"

namespace strata {

ModelShape GptModelShape(const GptConfig& c) {
  const int64_t C = c.n_embd;
  return {.arch = "gpt2",
          .n_layer = c.n_layer,
          .n_embd = c.n_embd,
          .vocab_size = c.vocab_size,
          .block_size = c.block_size,
          .num_params = c.num_params(),
          .matmul_params = 12 * c.n_layer * C * C + int64_t(c.vocab_size) * C,
          .description = c.to_string()};
}

GptModel::GptModel(const GptConfig& c, int tp)
    : layout_(tp > 1 ? MakeTpLayout(c, tp) : MakeGptLayout(c)), shape_(GptModelShape(c)), tp_(tp) {}

std::unique_ptr<Model> GptModel::tensor_parallel_rank(int tp) const {
  return std::make_unique<GptModel>(layout_.config, tp);
}

const TpGroup* GptModel::group(const OpShape& s) const { return TpGroupOf(s, tp_); }

Result<std::unique_ptr<WeightReader>> GptModel::open_weights(const std::string& path) const {
  return OpenGptWeights(path, layout_);
}

Result<std::unique_ptr<WeightWriter>> GptModel::create_weights(const std::string& path) const {
  return CreateGptWeights(path, layout_);
}

nlohmann::json GptModel::hf_config() const {
  const GptConfig& c = layout_.config;
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"n_layer", c.n_layer},
          {"n_head", c.n_head},
          {"n_embd", c.n_embd},
          {"vocab_size", c.vocab_size},
          {"n_positions", c.block_size},
          {"n_ctx", c.block_size},
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", 1e-5},
          {"tie_word_embeddings", true},
          {"torch_dtype", "float32"}};
}

int64_t GptModel::layer_acts_floats(int B, int T) const {
  return TransformerActsFloats(layout_.config, B, T, tp_);
}
// A tensor-parallel rank's head keeps the vocab-parallel statistics after its activations.
int64_t GptModel::head_acts_floats(int B, int T) const {
  return HeadActsFloats(layout_.config, B, T, tp_) + (tp_ > 1 ? TpHeadStatsFloats(B, T, tp_) : 0);
}
int64_t GptModel::scratch_floats(int B, int T) const {
  return BackwardScratchFloats(layout_.config, B, T, tp_);
}

TransformerActs GptModel::layer_acts(const OpShape& s, float* acts) const {
  return CarveTransformerActs(layout_.config, s.B, s.T, acts, tp_);
}

void GptModel::embedding_forward(const KernelTable& k, const OpShape& s, const float* params,
                                 const int32_t* tokens, float* out) const {
  if (const TpGroup* g = group(s)) {
    return TpEmbeddingForward(k, layout_, g->rank, params, tokens, s.B, s.T, out, g->all_reduce);
  }
  EmbeddingForward(k, layout_, params, tokens, s.B, s.T, out);
}

void GptModel::layer_forward(const KernelTable& k, const OpShape& s, int layer, const float* params,
                             const float* x, float* acts) const {
  TransformerForward(k, layout_, layer, params, x, s.B, s.T, layer_acts(s, acts), group(s));
}

const float* GptModel::layer_output(const OpShape& s, float* acts) const {
  return layer_acts(s, acts).out;
}

namespace {

TransformerWeights WeightsOf(const SplitWeights& w) {
  TransformerWeights t;
  STRATA_CHECK_EQ(w.tensor.size(), t.tensor.size());
  std::copy(w.tensor.begin(), w.tensor.end(), t.tensor.begin());
  t.slices = w.slices;
  t.slice = w.slice;
  return t;
}

}  // namespace

void GptModel::layer_forward_split(const KernelTable& k, const OpShape& s, int layer,
                                   const SplitWeights& w, const float* x, float* acts) const {
  TransformerForward(k, layout_, layer, WeightsOf(w), x, s.B, s.T, layer_acts(s, acts));
}

void GptModel::layer_backward_split(const KernelTable& k, const OpShape& s, int layer,
                                    const SplitWeights& w, float* grads, const float* x,
                                    float* acts, float* scratch, float* dres, bool first) const {
  TransformerBackward(k, layout_, layer, WeightsOf(w), grads, x, s.B, s.T, layer_acts(s, acts),
                      CarveBackwardScratch(layout_.config, s.B, s.T, scratch), dres, first);
}

float GptModel::head_forward(const KernelTable& k, const OpShape& s, const float* params,
                             const float* embedding, const float* x, const int32_t* targets,
                             float* acts) const {
  const float* wte = embedding + layout_.embedding().tensors[kWte].offset;
  const HeadActs a = CarveHeadActs(layout_.config, s.B, s.T, acts, tp_);
  if (const TpGroup* g = group(s)) {
    float* stats = acts + HeadActsFloats(layout_.config, s.B, s.T, tp_);
    return TpHeadForward(k, layout_, g->rank, params, wte, x, targets, s.B, s.T, a, stats,
                         g->all_reduce);
  }
  return HeadForward(k, layout_, params, wte, x, targets, s.B, s.T, a);
}

void GptModel::head_backward(const KernelTable& k, const OpShape& s, const float* params,
                             float* grads, const float* embedding, float* embedding_grads,
                             const float* x, const int32_t* targets, float* acts, float* scratch,
                             float dloss, float* dres, bool first) const {
  const int64_t wte = layout_.embedding().tensors[kWte].offset;
  const HeadActs a = CarveHeadActs(layout_.config, s.B, s.T, acts, tp_);
  const BackwardScratch d = CarveBackwardScratch(layout_.config, s.B, s.T, scratch, tp_);
  if (const TpGroup* g = group(s)) {
    return TpHeadBackward(k, layout_, g->rank, params, grads, embedding + wte,
                          embedding_grads + wte, x, targets, s.B, s.T, a, d, dloss, dres, first,
                          g->all_reduce);
  }
  HeadBackward(k, layout_, params, grads, embedding + wte, embedding_grads + wte, x, targets, s.B,
               s.T, a, d, dloss, dres, first);
}

void GptModel::layer_backward(const KernelTable& k, const OpShape& s, int layer,
                              const float* params, float* grads, const float* x, float* acts,
                              float* scratch, float* dres, bool first) const {
  const BackwardScratch d = CarveBackwardScratch(layout_.config, s.B, s.T, scratch, tp_);
  TransformerBackward(k, layout_, layer, params, grads, x, s.B, s.T, layer_acts(s, acts), d, dres,
                      first, group(s));
}

void GptModel::embedding_backward(const KernelTable& k, const OpShape& s, float* grads,
                                  const float* dres, const int32_t* tokens, float* scratch,
                                  bool first, bool first_tied) const {
  const BackwardScratch d = CarveBackwardScratch(layout_.config, s.B, s.T, scratch, tp_);
  if (const TpGroup* g = group(s)) {
    return TpEmbeddingBackward(k, layout_, g->rank, grads, dres, tokens, s.B, s.T, d, first,
                               first_tied);
  }
  EmbeddingBackward(k, layout_, grads, dres, tokens, s.B, s.T, d, first, first_tied);
}

}  // namespace strata
