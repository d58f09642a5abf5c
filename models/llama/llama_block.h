// Forward and backward of one LLaMA decoder layer (Hugging Face's LlamaDecoderLayer) on raw
// pointers, through a device's kernel table: the block's ops, before the model interface (issue
// 33) places them in a step.
//
//   h1  = rmsnorm(x) * w_in;     qkv = [h1 Wq^T | h1 Wk^T | h1 Wv^T], q and k rotated (RoPE)
//   res = x + attention(qkv) Wo^T
//   h2  = rmsnorm(res) * w_post; out = res + (silu(h2 Wg^T) * (h2 Wu^T)) Wd^T
//
// Weights are stored (out, in) as nn.Linear stores them. Conventions as models/gpt2/gpt_blocks.h:
// BT = B*T; gradients accumulate (+=); `dres` (BT, C) holds the gradient of the block's output
// on entry and of its input on return; scratch and dres are touched only through the table.
#pragma once

#include <cstdint>

#include "core/device/kernel_table.h"
#include "core/nn/block_spec.h"
#include "core/nn/split_weights.h"
#include "core/nn/tp_group.h"
#include "models/llama/llama_config.h"

namespace strata::models {

// What forward saves for backward.
struct LlamaBlockActs {
  float* h1;     // (BT, C) normalised input
  float* rstd1;  // (BT)
  float* qkv;    // (BT, C + 2 KV), q and k rotated
  float* atty;   // (BT, C) attention output before o_proj (C / tp on a tp rank)
  float* att;    // (B, NH, T, T)
  float* res;    // (BT, C) x + attention
  float* h2;     // (BT, C)
  float* rstd2;  // (BT)
  float* gu;     // (BT, 2F) [gate | up] projections
  float* mlp;    // (BT, F) silu(gate) * up
  float* out;    // (BT, C)
};

// Backward's scratch (one set per concurrent backward).
struct LlamaBlockScratch {
  float* dmlp;   // (BT, F)
  float* dgu;    // (BT, 2F)
  float* dh;     // (BT, C)
  float* datty;  // (BT, C)
  float* dqkv;   // (BT, C + 2 KV)
  float* datt;   // (B, NH, T, T)
};

// Floats of each, and their carving from one buffer (each part 64-byte aligned).
// `tp` > 1: at the widths of one tensor-parallel rank's slice of `tp`.
int64_t LlamaBlockActsFloats(const LlamaConfig& c, int B, int T, int tp = 1);
LlamaBlockActs CarveLlamaBlockActs(const LlamaConfig& c, int B, int T, float* base, int tp = 1);
int64_t LlamaBlockScratchFloats(const LlamaConfig& c, int B, int T, int tp = 1);
LlamaBlockScratch CarveLlamaBlockScratch(const LlamaConfig& c, int B, int T, float* base,
                                         int tp = 1);

// `spec` is the layer's block (a tensor-parallel rank's slice when `tp` is given, which then
// completes the partial sums over the group: core/nn/parallel_linear.h), `params`/`grads` its
// floats. `cos`, `sin` (T, head_dim / 2): device copies of kernels::rope_table for this T.
void LlamaBlockForward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                       const float* params, const float* cos, const float* sin, const float* x,
                       int B, int T, const LlamaBlockActs& acts, const TpGroup* tp = nullptr);
void LlamaBlockBackward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                        const float* params, float* grads, const float* cos, const float* sin,
                        const float* x, int B, int T, const LlamaBlockActs& acts,
                        const LlamaBlockScratch& scratch, float* dres, const TpGroup* tp = nullptr);
// The same with the layer's weights as SplitWeights (--split-ops: the MLP's weights slice by
// slice, the same bits as whole).
void LlamaBlockForward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                       const SplitWeights& w, const float* cos, const float* sin, const float* x,
                       int B, int T, const LlamaBlockActs& acts, const TpGroup* tp = nullptr);
void LlamaBlockBackward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                        const SplitWeights& w, float* grads, const float* cos, const float* sin,
                        const float* x, int B, int T, const LlamaBlockActs& acts,
                        const LlamaBlockScratch& scratch, float* dres, const TpGroup* tp = nullptr);

}  // namespace strata::models
