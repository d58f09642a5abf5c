#include "core/nn/tp_head.h"

#include <algorithm>

#include "core/nn/gradient_contribution.h"
#include "core/nn/tp_layout.h"
#include "core/util/check.h"

namespace strata {
namespace {

using nn_internal::Align;
using nn_internal::Contribute;
using nn_internal::Zero;

// A rank's slice of the padded vocabulary: its Vl rows start at global id `begin`, and the first
// `valid` of them are real (the rest padding); `tp` ranks in all.
struct VocabSlice {
  int rows, begin, valid, tp;
};

VocabSlice SliceOf(const GptLayout& layout, int tp_rank) {
  const int rows = int(layout.embedding().tensors[kWte].shape[0]);
  const int tp = int(TpPaddedVocab(layout.config) / rows);
  STRATA_CHECK(tp_rank >= 0 && tp_rank < tp) << "tp rank " << tp_rank << " of " << tp;
  const int begin = tp_rank * rows;
  const int valid = std::clamp(layout.config.vocab_size - begin, 0, rows);
  return {rows, begin, valid, tp};
}

// The parts of TpHeadForward's stats buffer (Note [Vocab-parallel cross-entropy]).
struct HeadStats {
  float* rank_max;  // (tp, BT): rank s's row maxima in slot s, gathered by a sum
  float* row_max;   // (BT): the rows' maxima over every rank
  float* sums;      // (2, BT): the sums of exp, then the targets' logits, summed over the ranks
};

HeadStats CarveStats(int N, int tp, float* base) {
  HeadStats s;
  s.rank_max = base;
  s.row_max = s.rank_max + Align(int64_t(tp) * N);
  s.sums = s.row_max + Align(N);
  return s;
}

}  // namespace

int64_t TpHeadStatsFloats(int B, int T, int tp) {
  const int64_t N = int64_t(B) * T;
  return Align(tp * N) + Align(N) + Align(2 * N);
}

void TpEmbeddingForward(const KernelTable& k, const GptLayout& layout, int tp_rank,
                        const float* params, const int32_t* tokens, int B, int T, float* out,
                        const TpAllReduce& all_reduce) {
  const auto& t = layout.embedding().tensors;
  const int C = layout.config.n_embd;
  const VocabSlice v = SliceOf(layout, tp_rank);
  k.vocab_parallel_embedding_forward(out, tokens, params + t[kWte].offset, B, T, C, v.begin,
                                     v.begin + v.rows);
  all_reduce(out, int64_t(B) * T * C);
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
  const HeadStats st = CarveStats(N, v.tp, stats);
  k.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, x, params + t[kLnfW].offset,
                      params + t[kLnfB].offset, N, C);
  // The rank's logits (N, Vl) = lnf @ wte_local^T, real columns only (padding never read).
  k.sgemm(false, true, N, v.valid, C, 1.0f, a.lnf, C, wte, C, 0.0f, a.logits, v.rows);
  Zero(k, st.rank_max, int64_t(v.tp) * N);
  k.vocab_parallel_logit_max(st.rank_max + int64_t(tp_rank) * N, a.logits, N, v.rows, v.valid);
  all_reduce(st.rank_max, int64_t(v.tp) * N);
  k.vocab_parallel_softmax_partial(a.probs, st.row_max, st.sums, st.rank_max, v.tp, a.logits,
                                   targets, N, v.rows, v.valid, v.begin);
  all_reduce(st.sums, 2 * int64_t(N));
  return k.vocab_parallel_crossentropy_forward(a.probs, st.row_max, st.sums, N, v.rows);
}

void TpHeadBackward(const KernelTable& k, const GptLayout& layout, int tp_rank, const float* params,
                    float* grads, const float* wte, float* dwte, const float* x,
                    const int32_t* targets, int B, int T, const HeadActs& a,
                    const BackwardScratch& s, float dloss, float* dres, bool first,
                    const TpAllReduce& all_reduce) {
  const int N = B * T, C = layout.config.n_embd;
  const VocabSlice v = SliceOf(layout, tp_rank);
  Zero(k, s.dlogits, int64_t(N) * v.rows);
  k.vocab_parallel_crossentropy_backward(s.dlogits, a.probs, targets, dloss, N, v.rows, v.begin);
  // dlnf (N, C) = dlogits (N, Vl) @ wte_local (Vl, C) over the real rows: a partial sum.
  k.sgemm(false, false, N, C, v.valid, 1.0f, s.dlogits, v.rows, wte, C, 0.0f, s.dln, C);
  all_reduce(s.dln, int64_t(N) * C);
  // dwte_local += dlogits^T @ lnf over the real rows; ln_f's backward, replicated: every rank has
  // the same dlnf, x and statistics.
  HeadParamsBackward(k, layout, params, grads, dwte, v.valid, v.rows, x, B, T, a, s, dres, first);
}

}  // namespace strata
