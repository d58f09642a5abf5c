// The shape of a LLaMA-family model (Hugging Face's LlamaForCausalLM): its presets, its checks,
// and its reading from a Hugging Face config.json. fp32 master weights; pre-norm RMSNorm,
// grouped-query attention with rotary embeddings, a SwiGLU MLP, an untied head unless
// tie_embeddings (docs/models.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata::models {

// Note [LLaMA shape limits]: as core/nn/shape_limits.h's Note [Shape limits], with a vocabulary
// up to 2^20 (LLaMA 3's is 128,256; token files hold uint32 ids) and an MLP up to 2^18 wide.
inline constexpr int kLlamaMaxVocab = 1 << 20;
inline constexpr int kLlamaMaxFfn = 1 << 18;

struct LlamaConfig {
  int n_layer = 0;
  int n_embd = 0;      // hidden_size
  int n_head = 0;      // query heads
  int n_kv_head = 0;   // key/value heads; divides n_head (grouped-query attention)
  int ffn_dim = 0;     // intermediate_size
  int vocab_size = 0;
  int block_size = 0;  // the context: the largest --seq (max_position_embeddings)
  double rope_theta = 10000.0;
  float norm_eps = 1e-5f;
  bool tie_embeddings = false;

  // InvalidArgument, with an OptionFault naming the option and the numbers, when a dimension is
  // not positive or above its limit, n_embd % n_head != 0, n_head % n_kv_head != 0, the head
  // dimension is odd (RoPE rotates pairs), rope_theta <= 1 or norm_eps is not in (0, 1).
  [[nodiscard]] Status validate() const;
  int head_dim() const { return n_embd / n_head; }
  int64_t num_params() const;
  // "llama(n_layer=22, n_embd=2048, n_head=32, n_kv_head=4, ffn=5632, vocab=32000, block=2048,
  // theta=10000, params=1.10B)"
  std::string to_string() const;

  friend bool operator==(const LlamaConfig&, const LlamaConfig&) = default;
};

// Named presets: llama-tiny (tests), llama-small (~10M, vocab 256), tinyllama-1.1b, llama3.2-1b,
// llama2-7b, llama3-8b. An unknown name is InvalidArgument listing the known ones.
Result<LlamaConfig> LlamaPreset(const std::string& name);
std::vector<std::string> LlamaPresetNames();

// The shape a Hugging Face config.json describes (`path` names it in messages): hidden_size,
// intermediate_size, num_attention_heads, num_key_value_heads (default: num_attention_heads),
// num_hidden_layers, rms_norm_eps, rope_theta (default 10000), vocab_size, tie_word_embeddings
// (default false), max_position_embeddings. Errors:
// - NotSupported naming the key for what Strata does not implement: a model_type other than
//   "llama", rope_scaling, attention_bias or mlp_bias true, hidden_act other than "silu", a
//   head_dim other than hidden_size / num_attention_heads;
// - Corruption naming the key when a required key is missing or of the wrong type;
// - validate()'s InvalidArgument for the shape it describes.
Result<LlamaConfig> LlamaConfigFromHf(const nlohmann::json& config, const std::string& path);

}  // namespace strata::models
