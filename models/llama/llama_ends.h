// The LLaMA model's ends on raw pointers, through a device's kernel table (conventions as
// llama_block.h): the token embedding (no position table: positions enter through RoPE) and
// the head, the final RMSNorm, the logits by lm_head (or the tied embed_tokens) and the mean
// cross-entropy.
#pragma once

#include <cstdint>

#include "core/device/kernel_table.h"
#include "core/nn/tp_group.h"
#include "models/llama/llama_config.h"

namespace strata::models {

// On a tensor-parallel rank (`tp` given, of more than one rank) embed_tokens and lm_head are
// the rank's rows of the padded vocabulary and the ends are vocab-parallel
// (core/nn/vocab_parallel.h); the final norm is replicated.

// out (BT, C) = embed[tokens]; token ids < vocab_size (checked by the data loader).
void LlamaEmbeddingForward(const KernelTable& k, const LlamaConfig& c, const float* embed,
                           const int32_t* tokens, int B, int T, float* out,
                           const TpGroup* tp = nullptr);
// dembed (V, C) += the rows of dres (BT, C) at their tokens (a tp rank's: its own rows).
void LlamaEmbeddingBackward(const KernelTable& k, const LlamaConfig& c, float* dembed,
                            const float* dres, const int32_t* tokens, int B, int T,
                            const TpGroup* tp = nullptr);

// What the head saves for its backward, and its backward's scratch.
struct LlamaHeadActs {
  float* hn;      // (BT, C) normalised
  float* rstd;    // (BT)
  float* logits;  // (BT, V); a tp rank's (BT, its rows)
  float* probs;   // the same
  float* stats;   // a tp rank's vocab-parallel statistics (TpHeadStatsFloats); else nullptr
};
int64_t LlamaHeadActsFloats(const LlamaConfig& c, int B, int T, int tp = 1);
LlamaHeadActs CarveLlamaHeadActs(const LlamaConfig& c, int B, int T, float* base, int tp = 1);
int64_t LlamaHeadScratchFloats(const LlamaConfig& c, int B, int T, int tp = 1);  // dlogits, dhn

// Returns the mean cross-entropy over BT tokens. `norm` is model.norm.weight, `lm_head` the
// (V, C) output weight: lm_head.weight, or embed_tokens when tied.
float LlamaHeadForward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, const float* x, const int32_t* targets, int B, int T,
                       const LlamaHeadActs& acts, const TpGroup* tp = nullptr);
// dres (BT, C) = the gradient of the objective by the head's input (written, not added: the head
// starts the residual stream's gradient), where `dloss` is the objective's gradient by each
// token's loss (1 / BT for this micro-batch's mean); dnorm, dlm_head +=. `scratch`:
// LlamaHeadScratchFloats floats.
void LlamaHeadBackward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, float* dnorm, float* dlm_head, const float* x,
                       const int32_t* targets, int B, int T, float dloss, const LlamaHeadActs& acts,
                       float* scratch, float* dres, const TpGroup* tp = nullptr);

}  // namespace strata::models
