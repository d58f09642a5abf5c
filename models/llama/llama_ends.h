// The LLaMA model's ends on raw pointers, through a device's kernel table (conventions as
// llama_block.h): the token embedding (no position table: positions enter through RoPE) and
// the head, the final RMSNorm, the logits by lm_head (or the tied embed_tokens) and the mean
// cross-entropy.
#pragma once

#include <cstdint>

#include "core/device/kernel_table.h"
#include "models/llama/llama_config.h"

namespace strata::models {

// out (BT, C) = embed[tokens]; token ids < vocab_size (checked by the data loader).
void LlamaEmbeddingForward(const KernelTable& k, const LlamaConfig& c, const float* embed,
                           const int32_t* tokens, int B, int T, float* out);
// dembed (V, C) += the rows of dres (BT, C) at their tokens.
void LlamaEmbeddingBackward(const KernelTable& k, const LlamaConfig& c, float* dembed,
                            const float* dres, const int32_t* tokens, int B, int T);

// What the head saves for its backward, and its backward's scratch.
struct LlamaHeadActs {
  float* hn;      // (BT, C) normalised
  float* rstd;    // (BT)
  float* logits;  // (BT, V)
  float* probs;   // (BT, V)
};
int64_t LlamaHeadActsFloats(const LlamaConfig& c, int B, int T);
LlamaHeadActs CarveLlamaHeadActs(const LlamaConfig& c, int B, int T, float* base);
int64_t LlamaHeadScratchFloats(const LlamaConfig& c, int B, int T);  // dlogits and dhn

// Returns the mean cross-entropy over BT tokens. `norm` is model.norm.weight, `lm_head` the
// (V, C) output weight: lm_head.weight, or embed_tokens when tied.
float LlamaHeadForward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, const float* x, const int32_t* targets, int B, int T,
                       const LlamaHeadActs& acts);
// dres (BT, C) = the gradient of the objective by the head's input (written, not added: the head
// starts the residual stream's gradient), where `dloss` is the objective's gradient by each
// token's loss (1 / BT for this micro-batch's mean); dnorm, dlm_head +=. `scratch`:
// LlamaHeadScratchFloats floats.
void LlamaHeadBackward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, float* dnorm, float* dlm_head, const float* x,
                       const int32_t* targets, int B, int T, float dloss,
                       const LlamaHeadActs& acts, float* scratch, float* dres);

}  // namespace strata::models
