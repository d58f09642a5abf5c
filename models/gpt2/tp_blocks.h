// A tensor-parallel transformer block (Megatron-LM; Note [Tensor-parallel slices] in
// tp_layout.h): forward and backward of one tp rank's slice of the block, on the device's kernels,
// with the tp group's all-reduce at Megatron's points. The conventions are gpt_blocks.h's: `acts`
// and `scratch` are carved for the slice (CarveTransformerActs(..., tp)) or more, gradients
// accumulate (Note [Gradient contributions]), `dres` carries the gradient along the residual.
//
// Note [Tensor-parallel all-reduces]
// Forward: after each row-parallel linear (attn.c_proj, mlp.c_proj) the output is a partial sum
// over the ranks; `all_reduce` completes it. Its replicated bias is added by tp rank 0's linear
// alone, so the sum holds it once. Backward: after each column-parallel linear (c_attn, c_fc) the
// gradient of its input is a partial sum; `all_reduce` completes it before the layernorm's
// backward. Everything else a rank computes is either its own slice (the column-parallel weights'
// gradients, the row-parallel weights', the attention of its heads) or the same on every rank
// (the layernorms and the row-parallel biases, whose gradients come from complete inputs), so the
// replicas stay equal. The sums change the order of the additions: a tp block equals the whole
// block up to float rounding.
#pragma once

#include <cstdint>

#include "core/device/kernel_table.h"
#include "core/nn/tp_group.h"
#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_layout.h"

namespace strata {

// `layout` is MakeTpLayout(c, tp)'s, `params` and `grads` this rank's slice of block `layer`.
void TpTransformerForward(const KernelTable& k, const GptLayout& layout, int layer, int tp_rank,
                          const float* params, const float* x, int B, int T,
                          const TransformerActs& acts, const TpAllReduce& all_reduce);
void TpTransformerBackward(const KernelTable& k, const GptLayout& layout, int layer, int tp_rank,
                           const float* params, float* grads, const float* x, int B, int T,
                           const TransformerActs& acts, const BackwardScratch& scratch, float* dres,
                           bool first, const TpAllReduce& all_reduce);

}  // namespace strata
