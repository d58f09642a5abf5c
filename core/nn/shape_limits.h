// The bounds every model's shape is checked against (Note [Shape limits]); a family may bound
// more (models/llama/llama_config.h's vocabulary and MLP).
#pragma once

namespace strata {

// Note [Shape limits]
// Every dimension has an upper bound, checked before anything is sized from it, so that a typo
// (--n-layer 100000000) or a lying file is one line, not gigabytes of bookkeeping and an abort.
// The bounds are far above any model one machine trains, and they keep every size computed from
// a shape inside 64 bits: GPT-2's parameters <= 12 C^2 L + (V + block) C + ... < 2^48 floats,
// and with the step limits of scheduler/option_ranges.h (kMaxTokensPerStep) one block's
// activations (the (B, n_head, T, T) attention scores dominate: <= 2^22 * 2^10 * 2^16 = 2^48
// floats) times n_layer stay below 2^61 bytes.
inline constexpr int kMaxLayers = 4096;
inline constexpr int kMaxEmbd = 65536;
inline constexpr int kMaxHeads = 1024;
inline constexpr int kMaxVocab = 65536;      // the largest id + 1 that a uint16 token file holds
inline constexpr int kMaxBlockSize = 65536;  // tokens of context (the attention is T x T)

}  // namespace strata
