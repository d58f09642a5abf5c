#include "models/llama/llama_model.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/kernels/rope.h"
#include "core/nn/gradient_contribution.h"
#include "core/nn/tp_layout.h"
#include "core/util/check.h"
#include "models/llama/llama_block.h"
#include "models/llama/llama_ends.h"
#include "models/llama/llama_weights.h"

namespace strata::models {
namespace {

using GradRange = std::pair<float*, int64_t>;

// The rotary table's halves in the constants (LlamaModel::constants).
const float* RopeCos(const OpShape& s) { return s.constants; }
const float* RopeSin(const LlamaConfig& c, const OpShape& s) {
  return s.constants + int64_t(s.T) * c.head_dim() / 2;
}

// The shortest decimal that reads back as `v` (1e-05, not 9.999999747378752e-06), as a double
// for JSON.
double ShortestDecimal(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

}  // namespace

LlamaModel::LlamaModel(const LlamaConfig& c, int tp) : layout_(MakeLlamaLayout(c)), tp_(tp) {
  if (tp > 1) SliceLayoutForTp(layout_, tp);
  const int64_t C = c.n_embd, KV = int64_t(c.n_kv_head) * c.head_dim(), F = c.ffn_dim;
  shape_ = {.arch = "llama",
            .n_layer = c.n_layer,
            .n_embd = c.n_embd,
            .vocab_size = c.vocab_size,
            .block_size = c.block_size,
            .num_params = c.num_params(),
            .matmul_params = c.n_layer * (2 * C * C + 2 * KV * C + 3 * C * F) + c.vocab_size * C,
            .description = c.to_string()};
}

Result<std::unique_ptr<WeightReader>> LlamaModel::open_weights(const std::string& path) const {
  return OpenLlamaWeights(path, layout_);
}

Result<std::unique_ptr<WeightWriter>> LlamaModel::create_weights(const std::string& path) const {
  return CreateLlamaWeights(path, layout_);
}

nlohmann::json LlamaModel::hf_config() const {
  const LlamaConfig& c = layout_.config;
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", c.n_embd},
          {"intermediate_size", c.ffn_dim},
          {"num_attention_heads", c.n_head},
          {"num_key_value_heads", c.n_kv_head},
          {"num_hidden_layers", c.n_layer},
          {"rms_norm_eps", ShortestDecimal(c.norm_eps)},
          {"rope_theta", c.rope_theta},
          {"vocab_size", c.vocab_size},
          {"max_position_embeddings", c.block_size},
          {"tie_word_embeddings", c.tie_embeddings},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"mlp_bias", false},
          {"torch_dtype", "float32"}};
}

std::unique_ptr<Model> LlamaModel::tensor_parallel_rank(int tp) const {
  return std::make_unique<LlamaModel>(layout_.config, tp);
}

const TpGroup* LlamaModel::group(const OpShape& s) const { return TpGroupOf(s, tp_); }

int64_t LlamaModel::layer_acts_floats(int B, int T) const {
  return LlamaBlockActsFloats(layout_.config, B, T, tp_);
}

int64_t LlamaModel::head_acts_floats(int B, int T) const {
  return LlamaHeadActsFloats(layout_.config, B, T, tp_);
}

int64_t LlamaModel::op_scratch_floats(int B, int T) const {
  return std::max(LlamaBlockScratchFloats(layout_.config, B, T, tp_),
                  LlamaHeadScratchFloats(layout_.config, B, T, tp_));
}

// The largest contribution one backward makes: a layer's block, the head's (with the tied
// embedding's when tied) or the embedding's.
int64_t LlamaModel::scratch_floats(int B, int T) const {
  int64_t contribution = layout_.embedding().numel;
  for (int l = 0; l < layout_.num_layers(); ++l) {
    contribution = std::max(contribution, layout_.layer(l).numel);
  }
  contribution = std::max(contribution, layout_.head().numel + (head_ties_embedding()
                                                                    ? layout_.embedding().numel
                                                                    : 0));
  return op_scratch_floats(B, T) + contribution;
}

std::vector<float> LlamaModel::constants(int T) const {
  const int64_t half = int64_t(T) * layout_.config.head_dim() / 2;
  std::vector<float> table(size_t(2 * half));
  kernels::rope_table(table.data(), table.data() + half, T, layout_.config.head_dim(),
                      layout_.config.rope_theta);
  return table;
}

void LlamaModel::embedding_forward(const KernelTable& k, const OpShape& s, const float* params,
                                   const int32_t* tokens, float* out) const {
  LlamaEmbeddingForward(k, layout_.config, params, tokens, s.B, s.T, out, group(s));
}

void LlamaModel::layer_forward(const KernelTable& k, const OpShape& s, int layer,
                               const float* params, const float* x, float* acts) const {
  layer_forward_split(k, s, layer, WholeWeights(layout_.layer(layer), params), x, acts);
}

void LlamaModel::layer_forward_split(const KernelTable& k, const OpShape& s, int layer,
                                     const SplitWeights& w, const float* x, float* acts) const {
  const LlamaConfig& c = layout_.config;
  LlamaBlockForward(k, c, layout_.layer(layer), w, RopeCos(s), RopeSin(c, s), x, s.B, s.T,
                    CarveLlamaBlockActs(c, s.B, s.T, acts, tp_), group(s));
}

const float* LlamaModel::layer_output(const OpShape& s, float* acts) const {
  return CarveLlamaBlockActs(layout_.config, s.B, s.T, acts, tp_).out;
}

const float* LlamaModel::lm_head(const float* params, const float* embedding) const {
  return head_ties_embedding() ? embedding : params + layout_.head().tensors[kLmHead].offset;
}

float LlamaModel::head_forward(const KernelTable& k, const OpShape& s, const float* params,
                               const float* embedding, const float* x, const int32_t* targets,
                               float* acts) const {
  const LlamaConfig& c = layout_.config;
  return LlamaHeadForward(k, c, params + layout_.head().tensors[kFinalNorm].offset,
                          lm_head(params, embedding), x, targets, s.B, s.T,
                          CarveLlamaHeadActs(c, s.B, s.T, acts, tp_), group(s));
}

void LlamaModel::head_backward(const KernelTable& k, const OpShape& s, const float* params,
                               float* grads, const float* embedding, float* embedding_grads,
                               const float* x, const int32_t* targets, float* acts,
                               float* scratch, float dloss, float* dres, bool first) const {
  const LlamaConfig& c = layout_.config;
  const bool tied = head_ties_embedding();
  const std::array<GradRange, 2> into = {
      GradRange{grads, layout_.head().numel},
      GradRange{embedding_grads, tied ? layout_.embedding().numel : 0}};
  nn_internal::Contribute(k, first, scratch + op_scratch_floats(s.B, s.T), into,
                          [&](const std::array<float*, 2>& g) {
    float* dlm_head = tied ? g[1] : g[0] + layout_.head().tensors[kLmHead].offset;
    LlamaHeadBackward(k, c, params + layout_.head().tensors[kFinalNorm].offset,
                      lm_head(params, embedding), g[0] + layout_.head().tensors[kFinalNorm].offset,
                      dlm_head, x, targets, s.B, s.T, dloss,
                      CarveLlamaHeadActs(c, s.B, s.T, acts, tp_), scratch, dres, group(s));
  });
}

void LlamaModel::layer_backward(const KernelTable& k, const OpShape& s, int layer,
                                const float* params, float* grads, const float* x, float* acts,
                                float* scratch, float* dres, bool first) const {
  layer_backward_split(k, s, layer, WholeWeights(layout_.layer(layer), params), grads, x, acts,
                       scratch, dres, first);
}

void LlamaModel::layer_backward_split(const KernelTable& k, const OpShape& s, int layer,
                                      const SplitWeights& w, float* grads, const float* x,
                                      float* acts, float* scratch, float* dres, bool first) const {
  const LlamaConfig& c = layout_.config;
  const BlockSpec& block = layout_.layer(layer);
  const std::array<GradRange, 1> into = {GradRange{grads, block.numel}};
  nn_internal::Contribute(
      k, first, scratch + op_scratch_floats(s.B, s.T), into, [&](const std::array<float*, 1>& g) {
        LlamaBlockBackward(k, c, block, w, g[0], RopeCos(s), RopeSin(c, s), x, s.B, s.T,
                           CarveLlamaBlockActs(c, s.B, s.T, acts, tp_),
                           CarveLlamaBlockScratch(c, s.B, s.T, scratch, tp_), dres, group(s));
      });
}

void LlamaModel::embedding_backward(const KernelTable& k, const OpShape& s, float* grads,
                                    const float* dres, const int32_t* tokens, float* scratch,
                                    bool first, bool first_tied) const {
  // embed_tokens is the block's one tensor: the tied tensor when the head reads it.
  const std::array<GradRange, 1> into = {GradRange{grads, layout_.embedding().numel}};
  nn_internal::Contribute(
      k, head_ties_embedding() ? first_tied : first, scratch + op_scratch_floats(s.B, s.T), into,
      [&](const std::array<float*, 1>& g) {
        LlamaEmbeddingBackward(k, layout_.config, g[0], dres, tokens, s.B, s.T, group(s));
      });
}

}  // namespace strata::models
