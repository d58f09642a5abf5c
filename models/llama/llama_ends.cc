#include "models/llama/llama_ends.h"

#include "core/nn/block_spec.h"
#include "core/nn/tp_layout.h"
#include "core/nn/vocab_parallel.h"

namespace strata::models {
namespace {

// The rank's slice of the vocabulary (embed_tokens' and lm_head's rows: Note [Tensor-parallel
// slices] in core/nn/tp_layout.h).
VocabSlice SliceOf(const LlamaConfig& c, const TpGroup& tp) {
  return VocabSliceOf(int(TpPaddedRows(c.vocab_size) / tp.size), c.vocab_size, tp.rank);
}

// The logits' columns a rank computes: the whole vocabulary, or its slice's rows.
int64_t LogitColumns(const LlamaConfig& c, int tp) {
  return tp > 1 ? TpPaddedRows(c.vocab_size) / tp : c.vocab_size;
}

}  // namespace

void LlamaEmbeddingForward(const KernelTable& k, const LlamaConfig& c, const float* embed,
                           const int32_t* tokens, int B, int T, float* out, const TpGroup* tp) {
  if (tp != nullptr && tp->size > 1) {
    return VocabParallelLookup(k, SliceOf(c, *tp), embed, tokens, B, T, c.n_embd, out,
                               tp->all_reduce);
  }
  // The vocabulary-slice lookup over the whole vocabulary is a plain lookup.
  k.vocab_parallel_embedding_forward(out, tokens, embed, B, T, c.n_embd, 0, c.vocab_size);
}

void LlamaEmbeddingBackward(const KernelTable& k, const LlamaConfig& c, float* dembed,
                            const float* dres, const int32_t* tokens, int B, int T,
                            const TpGroup* tp) {
  // dres is the same on every tp rank: each scatters it into its own real rows, no collective.
  const VocabSlice v = tp != nullptr && tp->size > 1
                           ? SliceOf(c, *tp)
                           : VocabSlice{.rows = c.vocab_size, .valid = c.vocab_size};
  k.embedding_backward(dembed, nullptr, dres, tokens, B, T, c.n_embd, v.begin, v.begin + v.valid);
}

int64_t LlamaHeadActsFloats(const LlamaConfig& c, int B, int T, int tp) {
  const int64_t BT = int64_t(B) * T;
  return AlignedFloats(BT * c.n_embd) + AlignedFloats(BT) +
         2 * AlignedFloats(BT * LogitColumns(c, tp)) + (tp > 1 ? TpHeadStatsFloats(B, T, tp) : 0);
}

LlamaHeadActs CarveLlamaHeadActs(const LlamaConfig& c, int B, int T, float* base, int tp) {
  const int64_t BT = int64_t(B) * T;
  LlamaHeadActs a;
  a.hn = base;
  a.rstd = a.hn + AlignedFloats(BT * c.n_embd);
  a.logits = a.rstd + AlignedFloats(BT);
  a.probs = a.logits + AlignedFloats(BT * LogitColumns(c, tp));
  a.stats = tp > 1 ? a.probs + AlignedFloats(BT * LogitColumns(c, tp)) : nullptr;
  return a;
}

int64_t LlamaHeadScratchFloats(const LlamaConfig& c, int B, int T, int tp) {
  const int64_t BT = int64_t(B) * T;
  return AlignedFloats(BT * LogitColumns(c, tp)) + AlignedFloats(BT * c.n_embd);
}

float LlamaHeadForward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, const float* x, const int32_t* targets, int B, int T,
                       const LlamaHeadActs& a, const TpGroup* tp) {
  const int N = B * T, C = c.n_embd, V = c.vocab_size;
  k.rmsnorm_forward(a.hn, a.rstd, x, norm, N, C, c.norm_eps);
  if (tp != nullptr && tp->size > 1) {
    return VocabParallelLossForward(k, SliceOf(c, *tp), tp->rank, a.hn, lm_head, targets, N, C,
                                    a.logits, a.probs, a.stats, tp->all_reduce);
  }
  k.sgemm(false, true, N, V, C, 1.0f, a.hn, C, lm_head, C, 0.0f, a.logits, V);
  return k.crossentropy_forward(a.probs, a.logits, targets, N, V);
}

void LlamaHeadBackward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, float* dnorm, float* dlm_head, const float* x,
                       const int32_t* targets, int B, int T, float dloss, const LlamaHeadActs& a,
                       float* scratch, float* dres, const TpGroup* tp) {
  const int N = B * T, C = c.n_embd, V = c.vocab_size;
  const bool sliced = tp != nullptr && tp->size > 1;
  float* dlogits = scratch;
  float* dhn = scratch + AlignedFloats(int64_t(N) * LogitColumns(c, sliced ? tp->size : 1));
  if (sliced) {
    // dhn complete over the group; dW (the rank's rows) += dlogits^T @ hn over its real rows.
    const VocabSlice v = SliceOf(c, *tp);
    VocabParallelLossBackward(k, v, a.probs, targets, dloss, lm_head, N, C, dlogits, dhn,
                              tp->all_reduce);
    k.sgemm(true, false, v.valid, C, N, 1.0f, dlogits, v.rows, a.hn, C, 1.0f, dlm_head, C);
  } else {
    k.zero(dlogits, int64_t(N) * V);
    k.crossentropy_backward(dlogits, a.probs, targets, dloss, N, V);
    // dhn = dlogits @ W; dW += dlogits^T @ hn.
    k.sgemm(false, false, N, C, V, 1.0f, dlogits, V, lm_head, C, 0.0f, dhn, C);
    k.sgemm(true, false, V, C, N, 1.0f, dlogits, V, a.hn, C, 1.0f, dlm_head, C);
  }
  // model.norm is replicated: the same dhn, x and statistics on every rank.
  k.zero(dres, int64_t(N) * C);
  k.rmsnorm_backward(dres, dnorm, dhn, x, norm, a.rstd, N, C);
}

}  // namespace strata::models
