#include "models/llama/llama_ends.h"

#include "core/nn/block_spec.h"

namespace strata::models {

void LlamaEmbeddingForward(const KernelTable& k, const LlamaConfig& c, const float* embed,
                           const int32_t* tokens, int B, int T, float* out) {
  // The vocabulary-slice lookup over the whole vocabulary is a plain lookup.
  k.vocab_parallel_embedding_forward(out, tokens, embed, B, T, c.n_embd, 0, c.vocab_size);
}

void LlamaEmbeddingBackward(const KernelTable& k, const LlamaConfig& c, float* dembed,
                            const float* dres, const int32_t* tokens, int B, int T) {
  k.embedding_backward(dembed, nullptr, dres, tokens, B, T, c.n_embd, 0, c.vocab_size);
}

int64_t LlamaHeadActsFloats(const LlamaConfig& c, int B, int T) {
  const int64_t BT = int64_t(B) * T;
  return AlignedFloats(BT * c.n_embd) + AlignedFloats(BT) + 2 * AlignedFloats(BT * c.vocab_size);
}

LlamaHeadActs CarveLlamaHeadActs(const LlamaConfig& c, int B, int T, float* base) {
  const int64_t BT = int64_t(B) * T;
  LlamaHeadActs a;
  a.hn = base;
  a.rstd = a.hn + AlignedFloats(BT * c.n_embd);
  a.logits = a.rstd + AlignedFloats(BT);
  a.probs = a.logits + AlignedFloats(BT * c.vocab_size);
  return a;
}

int64_t LlamaHeadScratchFloats(const LlamaConfig& c, int B, int T) {
  const int64_t BT = int64_t(B) * T;
  return AlignedFloats(BT * c.vocab_size) + AlignedFloats(BT * c.n_embd);
}

float LlamaHeadForward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, const float* x, const int32_t* targets, int B, int T,
                       const LlamaHeadActs& a) {
  const int N = B * T, C = c.n_embd, V = c.vocab_size;
  k.rmsnorm_forward(a.hn, a.rstd, x, norm, N, C, c.norm_eps);
  k.sgemm(false, true, N, V, C, 1.0f, a.hn, C, lm_head, C, 0.0f, a.logits, V);
  return k.crossentropy_forward(a.probs, a.logits, targets, N, V);
}

void LlamaHeadBackward(const KernelTable& k, const LlamaConfig& c, const float* norm,
                       const float* lm_head, float* dnorm, float* dlm_head, const float* x,
                       const int32_t* targets, int B, int T, float dloss,
                       const LlamaHeadActs& a, float* scratch, float* dres) {
  const int N = B * T, C = c.n_embd, V = c.vocab_size;
  float* dlogits = scratch;
  float* dhn = scratch + AlignedFloats(int64_t(N) * V);
  k.zero(dlogits, int64_t(N) * V);
  k.crossentropy_backward(dlogits, a.probs, targets, dloss, N, V);
  // dhn = dlogits @ W; dW += dlogits^T @ hn.
  k.sgemm(false, false, N, C, V, 1.0f, dlogits, V, lm_head, C, 0.0f, dhn, C);
  k.sgemm(true, false, V, C, N, 1.0f, dlogits, V, a.hn, C, 1.0f, dlm_head, C);
  k.zero(dres, int64_t(N) * C);
  k.rmsnorm_backward(dres, dnorm, dhn, x, norm, a.rstd, N, C);
}

}  // namespace strata::models
