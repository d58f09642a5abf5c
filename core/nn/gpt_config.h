// The shape of a GPT-2-architecture model, its presets, and validation of user-given shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata {

// Note [Shape limits]
// Every dimension has an upper bound, checked before anything is sized from it, so that a typo
// (--n-layer 100000000) or a lying file is one line, not gigabytes of bookkeeping and an abort.
// The bounds are far above any model one machine trains, and they keep every size computed from
// a shape inside 64 bits: parameters <= 12 C^2 L + (V + block) C + ... < 2^48 floats, and with
// the step limits of scheduler/option_ranges.h (kMaxTokensPerStep) one block's activations (the
// (B, n_head, T, T) attention scores dominate: <= 2^22 * 2^10 * 2^16 = 2^48 floats) times
// n_layer stay below 2^61 bytes.
inline constexpr int kMaxLayers = 4096;
inline constexpr int kMaxEmbd = 65536;
inline constexpr int kMaxHeads = 1024;
inline constexpr int kMaxVocab = 65536;       // the largest id + 1 that a uint16 token file holds
inline constexpr int kMaxBlockSize = 65536;   // tokens of context (the attention is T x T)

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
