// The shape of a GPT-2-architecture model, its presets, and validation of user-given shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/shape_limits.h"
#include "core/util/status.h"

namespace strata {

// Its dimensions are bounded as every model's are (Note [Shape limits], core/nn/shape_limits.h).
struct GptConfig {
  int n_layer = 0;
  int n_head = 0;
  int n_embd = 0;
  int vocab_size = 0;
  int block_size = 0;  // the model's context: the largest --seq it accepts (wpe rows)

  // InvalidArgument naming the flag when a dimension is not positive or above its limit
  // (Note [Shape limits]), or n_embd % n_head != 0.
  Status validate() const;
  int head_size() const { return n_embd / n_head; }
  // Number of trainable parameters (the head is tied to wte and adds none).
  int64_t num_params() const;
  // "gpt(n_layer=6, n_head=6, n_embd=384, vocab=256, block=256, params=10.8M)"
  std::string to_string() const;

  friend bool operator==(const GptConfig&, const GptConfig&) = default;
};

// Named presets: tiny (tests), small (~10M params, vocab 256), gpt2 (124M), gpt2-medium,
// gpt2-large, gpt2-xl. Unknown names are InvalidArgument listing the known ones.
Result<GptConfig> GptPreset(const std::string& name);
std::vector<std::string> GptPresetNames();

}  // namespace strata
