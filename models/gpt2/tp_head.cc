#include "models/gpt2/tp_head.h"

#include <algorithm>

#include "core/nn/gradient_contribution.h"

namespace strata {
namespace {

using nn_internal::Contribute;

VocabSlice SliceOf(const GptLayout& layout, int tp_rank) {
  return VocabSliceOf(int(layout.embedding().tensors[kWte].shape[0]), layout.config.vocab_size,
                      tp_rank);
}

}  // namespace

void TpEmbeddingForward(const KernelTable& k, const GptLayout& layout, int tp_rank,
                        const float* params, const int32_t* tokens, int B, int T, float* out,
                        const TpAllReduce& all_reduce) {
  const auto& t = layout.embedding().tensors;
  const int C = layout.config.n_embd;
  const VocabSlice v = SliceOf(layout, tp_rank);
  VocabParallelLookup(k, v, params + t[kWte].offset, tokens, B, T, C, out, all_reduce);
  // wte + wpe, the order of embedding_forward's one addition.
  for (int b = 0; b < B; ++b) {
    float* row = out + int64_t(b) * T * C;
    k.residual_forward(row, row, params + t[kWpe].offset, int64_t(T) * C);
  }
}

void TpEmbeddingBackward(const KernelTable& k, const GptLayout& layout, int tp_rank, float* grads,
                         const float* dres, const int32_t* tokens, int B, int T,
                         const BackwardScratch& s, bool first_wpe, bool first_wte) {
  const auto& t = layout.embedding().tensors;
  const int C = layout.config.n_embd;
  const VocabSlice v = SliceOf(layout, tp_rank);
  float* dwpe = grads + t[kWpe].offset;
  Contribute<1>(k, first_wpe, s.dparam, {{{dwpe, int64_t(T) * C}}},
                [&](auto& d) { k.embedding_backward(nullptr, d[0], dres, tokens, B, T, C, 0, 0); });
  // The rank's real rows, in slices (Note [Gradient contributions]); the padding's stay zero.
  float* dwte = grads + t[kWte].offset;
  const int rows = GradSliceRows(layout.config, T);
  for (int r0 = 0; r0 < v.valid; r0 += rows) {
    const int r = std::min(rows, v.valid - r0);
    Contribute<1>(k, first_wte, s.dparam, {{{dwte + int64_t(r0) * C, int64_t(r) * C}}},
                  [&](auto& d) {
                    k.embedding_backward(d[0], nullptr, dres, tokens, B, T, C, v.begin + r0,
                                         v.begin + r0 + r);
                  });
  }
}

float TpHeadForward(const KernelTable& k, const GptLayout& layout, int tp_rank, const float* params,
                    const float* wte, const float* x, const int32_t* targets, int B, int T,
                    const HeadActs& a, float* stats, const TpAllReduce& all_reduce) {
  const auto& t = layout.head().tensors;
  const int N = B * T, C = layout.config.n_embd;
  const VocabSlice v = SliceOf(layout, tp_rank);
  k.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, x, params + t[kLnfW].offset,
                      params + t[kLnfB].offset, N, C);
  return VocabParallelLossForward(k, v, tp_rank, a.lnf, wte, targets, N, C, a.logits, a.probs,
                                  stats, all_reduce);
}

void TpHeadBackward(const KernelTable& k, const GptLayout& layout, int tp_rank, const float* params,
                    float* grads, const float* wte, float* dwte, const float* x,
                    const int32_t* targets, int B, int T, const HeadActs& a,
                    const BackwardScratch& s, float dloss, float* dres, bool first,
                    const TpAllReduce& all_reduce) {
  const int N = B * T, C = layout.config.n_embd;
  const VocabSlice v = SliceOf(layout, tp_rank);
  VocabParallelLossBackward(k, v, a.probs, targets, dloss, wte, N, C, s.dlogits, s.dln, all_reduce);
  // dwte_local += dlogits^T @ lnf over the real rows; ln_f's backward, replicated: every rank has
  // the same dlnf, x and statistics.
  HeadParamsBackward(k, layout, params, grads, dwte, v.valid, v.rows, x, B, T, a, s, dres, first);
}

}  // namespace strata
