// The LLaMA model's state as blocks of named tensors (core/nn/block_spec.h), with Hugging Face's
// names and nn.Linear's (out, in) storage:
//   0          embedding: model.embed_tokens.weight (V, C)
//   1 .. L     decoder layer l-1: model.layers.l.input_layernorm.weight (C),
//              self_attn.{q,k,v,o}_proj.weight ((C, C), (KV, C), (KV, C), (C, C)),
//              post_attention_layernorm.weight (C), mlp.{gate,up,down}_proj.weight ((F, C),
//              (F, C), (C, F)); KV = n_kv_head * head_dim
//   L + 1      head: model.norm.weight (C), and lm_head.weight (V, C) unless the embeddings are
//              tied (then the logits use block 0's embed_tokens)
// Initialisation as Hugging Face's LlamaPreTrainedModel: linears and the embedding
// normal(0, 0.02), the norms ones.
#pragma once

#include <cstdint>
#include <vector>

#include "core/nn/model_layout.h"
#include "models/llama/block_tensors.h"
#include "models/llama/llama_config.h"

namespace strata::models {

// Tensor order inside a decoder layer and the head (index into BlockSpec::tensors).
enum LlamaLayerTensor { kInputNorm = 0, kQProj, kKProj, kVProj, kOProj, kPostNorm, kGateProj,
                        kUpProj, kDownProj };
enum LlamaHeadTensor { kFinalNorm = 0, kLmHead };

inline constexpr float kLlamaInitStd = 0.02f;  // Hugging Face's initializer_range

// The blocks (ModelLayout) and the shape they were made from.
struct LlamaLayout : ModelLayout {
  LlamaConfig config;

  const BlockSpec& layer(int l) const { return blocks[size_t(1 + l)]; }
};

// Pure function of the config; the config must be valid (checked).
LlamaLayout MakeLlamaLayout(const LlamaConfig& config);

// A decoder layer's tensors in its block's contiguous parameters (or gradients).
LlamaBlockTensors LayerTensors(const BlockSpec& layer, const float* block);
LlamaBlockGrads LayerGrads(const BlockSpec& layer, float* block);

}  // namespace strata::models
