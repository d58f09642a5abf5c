// The vocab-parallel embedding and LM head (Megatron-LM; Note [Tensor-parallel slices] in
// tp_layout.h): forward and backward of one tp rank's slice of the embedding block and of the head,
// whose tied wte holds the rank's rows of the padded vocabulary, on the device's kernels, with the
// tp group's all-reduce (core/nn/tp_group.h's TpAllReduce). The conventions are gpt_blocks.h's:
// gradients accumulate (Note [Gradient contributions]), `dres` carries the gradient along the
// residual. `layout` is MakeTpLayout(c, tp)'s: its `config` is the whole model's (vocab_size the
// real V), and the rank's wte rows, Vl = Vp / tp with Vp = TpPaddedVocab(c), are the global
// vocabulary ids [tp_rank * Vl, (tp_rank + 1) * Vl); ids >= V are padding (zero rows, never a token
// or target).
//
// Note [Vocab-parallel cross-entropy]
// Embedding forward: each rank writes wte[tok] for the tokens it owns and -0.0f for the others
// (the exact additive identity), `all_reduce` sums them, and wpe is added after: wte[tok] + wpe[t]
// with the one rounding of EmbeddingForward, so the output is the whole model's, bit for bit.
// Embedding backward: dres is the same on every rank, so each rank scatters it into its own wte
// rows with no collective; each row's additions run in the same position order as the whole
// model's, so its wte rows are the whole model's rows bit for bit (and wpe, replicated, too).
// Head forward: lnf = ln_f(x) is replicated (every rank has the whole x). A rank's logits are
// z (BT, Vl) = lnf @ wte_local^T, only its real columns computed; no rank holds the whole logits.
// The loss of row r is m + log(sum_v exp(z_v - m)) - z_target for any m common to all ranks; m is
// the row's maximum over every rank's real columns, so no exponent is positive:
// 1. each rank writes its rows' maxima into its own slot of a zeroed (tp, BT) buffer, and the sum
//    `all_reduce` gathers them (x + 0 = x); every rank takes their maximum in rank order;
// 2. each rank sums exp(z - m) over its real columns, and writes the target's logit where it owns
//    the target (-0.0f elsewhere): one `all_reduce` of these 2·BT floats completes both;
// 3. each rank normalizes its local probabilities (kept in acts.probs for backward) and computes
//    the mean loss from the same all-reduced numbers: the same bits on every rank.
// Head backward: dz = (p - onehot) * dloss on the rank's columns (0 on padding). dlnf = dz @
// wte_local is a partial sum over the vocabulary: `all_reduce` completes it, and then ln_f's
// backward (dres, and ln_f's gradients) is replicated: the same inputs, so the same bits on every
// rank, and the replicas stay equal. dwte_local += dz^T @ lnf is the rank's own rows: the padding
// rows are never written (they stay zero).
// What matches the whole model: the embedding forward and the embedding backward's wte rows and
// wpe bit for bit; the head (loss, dres, ln_f's gradients, dwte's rows) up to float rounding, since
// splitting the vocabulary changes the order of the additions (the sums of exp, the dlnf GEMM).
// With tp = 1 and a vocabulary a multiple of 128, the head gives the whole model's bits too.
#pragma once

#include <cstdint>

#include "core/device/kernel_table.h"
#include "core/nn/tp_group.h"
#include "core/nn/vocab_parallel.h"
#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_layout.h"

namespace strata {

// out (BT, C) = wte[tokens] + wpe[t]: the whole model's bits on every rank. `params` is this
// rank's embedding block; token ids must be < the real vocabulary. One `all_reduce` of BT·C floats.
void TpEmbeddingForward(const KernelTable& k, const GptLayout& layout, int tp_rank,
                        const float* params, const int32_t* tokens, int B, int T, float* out,
                        const TpAllReduce& all_reduce);
// grads (this rank's embedding block) += from dres, which must be the same on every tp rank; no
// collective. first_wpe / first_wte as EmbeddingBackward's.
void TpEmbeddingBackward(const KernelTable& k, const GptLayout& layout, int tp_rank, float* grads,
                         const float* dres, const int32_t* tokens, int B, int T,
                         const BackwardScratch& scratch, bool first_wpe, bool first_wte);

// Returns the mean cross-entropy of the batch, the same bits on every rank. `params` is the head
// block (replicated), `wte` this rank's rows (Vl, C) from its embedding block, `acts` carved for
// tp (CarveHeadActs(..., tp): logits and probs of (BT, Vl)), `stats` TpHeadStatsFloats floats of
// scratch. Two `all_reduce`s: tp·BT, 2·BT.
float TpHeadForward(const KernelTable& k, const GptLayout& layout, int tp_rank, const float* params,
                    const float* wte, const float* x, const int32_t* targets, int B, int T,
                    const HeadActs& acts, float* stats, const TpAllReduce& all_reduce);
// As HeadBackward: dres = the gradient of x (overwritten, the same on every rank), head grads +=,
// dwte (this rank's rows, Vl x C) +=; `scratch` carved for tp. One `all_reduce`
// of BT·C floats.
void TpHeadBackward(const KernelTable& k, const GptLayout& layout, int tp_rank, const float* params,
                    float* grads, const float* wte, float* dwte, const float* x,
                    const int32_t* targets, int B, int T, const HeadActs& acts,
                    const BackwardScratch& scratch, float dloss, float* dres, bool first,
                    const TpAllReduce& all_reduce);

}  // namespace strata
