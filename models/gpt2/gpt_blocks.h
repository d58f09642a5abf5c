// Forward and backward of each GPT block on raw pointers: the compute ops the scheduler runs.
//
// Conventions: B batch rows, T sequence length, BT = B*T. Parameters and gradients of a block
// are contiguous in the layout of its BlockSpec (gpt_layout.h). Gradients accumulate, so
// micro-batches add up (Note [Gradient contributions]); the caller zeroes them once per step,
// before their first contribution. `dres` is the gradient flowing
// along the residual stream (BT, C): a block's backward reads it as the gradient of its output
// and leaves in it the gradient of its input. All pointers must stay valid and, on the sim
// device, device-resident for the duration of the call.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <utility>

#include "core/device/kernel_table.h"
#include "core/nn/split_weights.h"
#include "core/nn/tp_group.h"
#include "models/gpt2/gpt_layout.h"

namespace strata {

// Activations a transformer block saves in forward for its backward.
struct TransformerActs {
  float* ln1;       // (BT, C)
  float* ln1_mean;  // (BT)
  float* ln1_rstd;  // (BT)
  float* qkv;       // (BT, 3C)
  float* atty;      // (BT, C) attention output before c_proj
  float* att;       // (B, NH, T, T) softmax probabilities
  float* res2;      // (BT, C) x + attn(x)
  float* ln2;       // (BT, C)
  float* ln2_mean;  // (BT)
  float* ln2_rstd;  // (BT)
  float* fch;       // (BT, 4C) c_fc output
  float* fch_gelu;  // (BT, 4C)
  float* out;       // (BT, C) the block's output, res2 + mlp(ln2)
};

// The head's saved activations.
struct HeadActs {
  float* lnf;       // (BT, C)
  float* lnf_mean;  // (BT)
  float* lnf_rstd;  // (BT)
  float* logits;    // (BT, V)
  float* probs;     // (BT, V)
};

// GPT-2's gradient contributions (Note [Gradient contributions] in
// core/nn/gradient_contribution.h) are made in BackwardScratch::dparam, GradScratchFloats floats.
// The wte gradient (V x C, the largest) is made in slices of GradSliceRows rows in every case,
// first or not, so that its bits never depend on where it is made.
int64_t GradScratchFloats(const GptConfig& c, int T);
int GradSliceRows(const GptConfig& c, int T);

// Scratch shared by every block's backward (one set per concurrent backward).
struct BackwardScratch {
  float* dfch_gelu;  // (BT, 4C)
  float* dfch;       // (BT, 4C)
  float* dln;        // (BT, C)
  float* datty;      // (BT, C)
  float* dqkv;       // (BT, 3C)
  float* datt;       // (B, NH, T, T)
  float* dlogits;    // (BT, V)
  float*
      dparam;  // GradScratchFloats: a later gradient contribution (Note [Gradient contributions])
};

// Sizes in floats (each part rounded to kTensorAlignFloats) and carving of one buffer. With
// tp > 1, a tensor-parallel rank's (tp_head.h, and the blocks above with their group): its
// attention and MLP columns, heads and vocabulary slice are 1/tp of the whole model's (tp divides
// the heads and the padded vocabulary, as MakeTpLayout requires).
int64_t TransformerActsFloats(const GptConfig& c, int B, int T, int tp = 1);
TransformerActs CarveTransformerActs(const GptConfig& c, int B, int T, float* base, int tp = 1);
int64_t HeadActsFloats(const GptConfig& c, int B, int T, int tp = 1);
HeadActs CarveHeadActs(const GptConfig& c, int B, int T, float* base, int tp = 1);
int64_t BackwardScratchFloats(const GptConfig& c, int B, int T, int tp = 1);
BackwardScratch CarveBackwardScratch(const GptConfig& c, int B, int T, float* base, int tp = 1);

// Every function below computes through `k`, the kernel table of the device that holds the
// pointers (Device::kernels()), and calls no kernel directly; `k` must be complete. Backward
// scratch and dres are zeroed through k.zero too: host code never touches device memory.

// out (BT, C) = wte[tokens] + wpe[t]. Token ids must be < vocab (checked by the data loader).
void EmbeddingForward(const KernelTable& k, const GptLayout& layout, const float* params,
                      const int32_t* tokens, int B, int T, float* out);
// grads (embedding block layout) += from dres. first_wpe / first_wte: this is the step's first
// contribution to wpe / wte (Note [Gradient contributions]; wte's first is the head's).
void EmbeddingBackward(const KernelTable& k, const GptLayout& layout, float* grads,
                       const float* dres, const int32_t* tokens, int B, int T,
                       const BackwardScratch& scratch, bool first_wpe, bool first_wte);

// `tp`: on a tensor-parallel rank (the layout MakeTpLayout's, acts and scratch carved for it), its
// group; the all-reduces its weights' rules imply happen inside (core/nn/parallel_linear.h).
void TransformerForward(const KernelTable& k, const GptLayout& layout, int layer,
                        const float* params, const float* x, int B, int T,
                        const TransformerActs& acts, const TpGroup* tp = nullptr);
void TransformerBackward(const KernelTable& k, const GptLayout& layout, int layer,
                         const float* params, float* grads, const float* x, int B, int T,
                         const TransformerActs& acts, const BackwardScratch& scratch, float* dres,
                         bool first, const TpGroup* tp = nullptr);

// A transformer block's parameters as one pointer per tensor (TransformerTensor order), for a
// block whose parameters are not one contiguous layout: a split block (Note [Split operators] in
// scheduler/split_plan.h). With `slices` > 1 the weights of mlp.c_fc and mlp.c_proj are not given
// (nullptr): `slice(tensor, s)` returns rows LinearSliceRows(rows, slices, s) of that weight, and
// is called once per slice in the order the kernels use them (forward: c_fc's slices in order,
// then c_proj's; backward: c_proj's, then c_fc's). The results are the bits of the whole block's.
inline constexpr int kTransformerTensors = kFcProjB + 1;
struct TransformerWeights {
  std::array<const float*, kTransformerTensors> tensor{};
  int slices = 1;
  std::function<const float*(int tensor, int slice)> slice;
};
// The weights of a block's contiguous parameters (no slices).
TransformerWeights WholeTransformerWeights(const GptLayout& layout, int layer, const float* params);
void TransformerForward(const KernelTable& k, const GptLayout& layout, int layer,
                        const TransformerWeights& weights, const float* x, int B, int T,
                        const TransformerActs& acts, const TpGroup* tp = nullptr);
void TransformerBackward(const KernelTable& k, const GptLayout& layout, int layer,
                         const TransformerWeights& weights, float* grads, const float* x, int B,
                         int T, const TransformerActs& acts, const BackwardScratch& scratch,
                         float* dres, bool first, const TpGroup* tp = nullptr);

// Returns the mean cross-entropy of the batch. `wte` is the tied embedding (from block 0).
float HeadForward(const KernelTable& k, const GptLayout& layout, const float* params,
                  const float* wte, const float* x, const int32_t* targets, int B, int T,
                  const HeadActs& acts);
// Writes dres = gradient of the loss w.r.t. x (overwrites), head grads +=, dwte += (tied).
// first: the step's first contribution to the head's gradients and to dwte.
// `dloss` is the gradient of the step's objective w.r.t. each token's loss (1/BT for a mean
// over one micro-batch, 1/(BT * micro_batches) with accumulation).
void HeadBackward(const KernelTable& k, const GptLayout& layout, const float* params, float* grads,
                  const float* wte, float* dwte, const float* x, const int32_t* targets, int B,
                  int T, const HeadActs& acts, const BackwardScratch& scratch, float dloss,
                  float* dres, bool first);
// The head backward's end, shared with the vocab-parallel head (tp_head.h): from scratch.dlogits
// (ld_logits floats per row) and the complete scratch.dln, dwte's first `wte_rows` rows +=
// dlogits^T @ lnf in slices of GradSliceRows, then ln_f's backward into dres (overwritten) and
// the head's gradients.
void HeadParamsBackward(const KernelTable& k, const GptLayout& layout, const float* params,
                        float* grads, float* dwte, int wte_rows, int ld_logits, const float* x,
                        int B, int T, const HeadActs& acts, const BackwardScratch& scratch,
                        float* dres, bool first);

}  // namespace strata
