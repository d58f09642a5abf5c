#include "core/nn/gpt_blocks.h"

#include <cstring>

namespace strata {
namespace {

int64_t Align(int64_t n) {
  return (n + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
}

// Hands out consecutive aligned pieces of one buffer (or only counts them when base is null).
class Carver {
 public:
  explicit Carver(float* base) : base_(base) {}
  float* take(int64_t floats) {
    float* p = base_ ? base_ + used_ : nullptr;
    used_ += Align(floats);
    return p;
  }
  int64_t used() const { return used_; }

 private:
  float* base_;
  int64_t used_ = 0;
};

TransformerActs Carve(const GptConfig& c, int B, int T, Carver& k) {
  const int64_t BT = int64_t(B) * T, C = c.n_embd;
  TransformerActs a;
  a.ln1 = k.take(BT * C);
  a.ln1_mean = k.take(BT);
  a.ln1_rstd = k.take(BT);
  a.qkv = k.take(BT * 3 * C);
  a.atty = k.take(BT * C);
  a.att = k.take(int64_t(B) * c.n_head * T * T);
  a.res2 = k.take(BT * C);
  a.ln2 = k.take(BT * C);
  a.ln2_mean = k.take(BT);
  a.ln2_rstd = k.take(BT);
  a.fch = k.take(BT * 4 * C);
  a.fch_gelu = k.take(BT * 4 * C);
  a.out = k.take(BT * C);
  return a;
}

HeadActs CarveHead(const GptConfig& c, int B, int T, Carver& k) {
  const int64_t BT = int64_t(B) * T;
  HeadActs a;
  a.lnf = k.take(BT * c.n_embd);
  a.lnf_mean = k.take(BT);
  a.lnf_rstd = k.take(BT);
  a.logits = k.take(BT * c.vocab_size);
  a.probs = k.take(BT * c.vocab_size);
  return a;
}

BackwardScratch CarveScratch(const GptConfig& c, int B, int T, Carver& k) {
  const int64_t BT = int64_t(B) * T, C = c.n_embd;
  BackwardScratch s;
  s.dfch_gelu = k.take(BT * 4 * C);
  s.dfch = k.take(BT * 4 * C);
  s.dln = k.take(BT * C);
  s.datty = k.take(BT * C);
  s.dqkv = k.take(BT * 3 * C);
  s.datt = k.take(int64_t(B) * c.n_head * T * T);
  s.dlogits = k.take(BT * c.vocab_size);
  return s;
}

void Zero(float* p, int64_t n) { std::memset(p, 0, sizeof(float) * n); }

// One layout function per struct serves both needs: run over a null base it only counts.
template <typename Parts>
int64_t FloatsOf(Parts (*carve)(const GptConfig&, int, int, Carver&), const GptConfig& c, int B,
                 int T) {
  Carver k(nullptr);
  carve(c, B, T, k);
  return k.used();
}
template <typename Parts>
Parts CarveFrom(Parts (*carve)(const GptConfig&, int, int, Carver&), const GptConfig& c, int B,
                int T, float* base) {
  Carver k(base);
  return carve(c, B, T, k);
}

}  // namespace

int64_t TransformerActsFloats(const GptConfig& c, int B, int T) { return FloatsOf(Carve, c, B, T); }
TransformerActs CarveTransformerActs(const GptConfig& c, int B, int T, float* base) {
  return CarveFrom(Carve, c, B, T, base);
}
int64_t HeadActsFloats(const GptConfig& c, int B, int T) { return FloatsOf(CarveHead, c, B, T); }
HeadActs CarveHeadActs(const GptConfig& c, int B, int T, float* base) {
  return CarveFrom(CarveHead, c, B, T, base);
}
int64_t BackwardScratchFloats(const GptConfig& c, int B, int T) {
  return FloatsOf(CarveScratch, c, B, T);
}
BackwardScratch CarveBackwardScratch(const GptConfig& c, int B, int T, float* base) {
  return CarveFrom(CarveScratch, c, B, T, base);
}

void EmbeddingForward(const KernelTable& k, const GptLayout& layout, const float* params,
                      const int32_t* tokens, int B, int T, float* out) {
  const auto& spec = layout.embedding();
  k.embedding_forward(out, tokens, params + spec.tensors[kWte].offset,
                      params + spec.tensors[kWpe].offset, B, T, layout.config.n_embd);
}

void EmbeddingBackward(const KernelTable& k, const GptLayout& layout, float* grads,
                       const float* dres, const int32_t* tokens, int B, int T) {
  const auto& spec = layout.embedding();
  k.embedding_backward(grads + spec.tensors[kWte].offset, grads + spec.tensors[kWpe].offset, dres,
                       tokens, B, T, layout.config.n_embd);
}

void TransformerForward(const KernelTable& k, const GptLayout& layout, int layer,
                        const float* params, const float* x, int B, int T,
                        const TransformerActs& a) {
  const auto& t = layout.transformer(layer).tensors;
  const GptConfig& c = layout.config;
  const int N = B * T, C = c.n_embd;
  auto p = [&](int i) { return params + t[i].offset; };
  k.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, p(kLn1W), p(kLn1B), N, C);
  k.linear_forward(a.qkv, a.ln1, p(kQkvW), p(kQkvB), N, C, 3 * C);
  k.attention_forward(a.atty, a.att, a.qkv, B, T, C, c.n_head);
  k.linear_forward(a.res2, a.atty, p(kAttProjW), p(kAttProjB), N, C, C);
  k.residual_forward(a.res2, a.res2, x, int64_t(N) * C);
  k.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, p(kLn2W), p(kLn2B), N, C);
  k.linear_forward(a.fch, a.ln2, p(kFcW), p(kFcB), N, C, 4 * C);
  k.gelu_forward(a.fch_gelu, a.fch, int64_t(N) * 4 * C);
  k.linear_forward(a.out, a.fch_gelu, p(kFcProjW), p(kFcProjB), N, 4 * C, C);
  k.residual_forward(a.out, a.out, a.res2, int64_t(N) * C);
}

void TransformerBackward(const KernelTable& k, const GptLayout& layout, int layer,
                         const float* params, float* grads, const float* x, int B, int T,
                         const TransformerActs& a, const BackwardScratch& s, float* dres) {
  const auto& t = layout.transformer(layer).tensors;
  const GptConfig& c = layout.config;
  const int N = B * T, C = c.n_embd;
  const int64_t NC = int64_t(N) * C;
  auto p = [&](int i) { return params + t[i].offset; };
  auto g = [&](int i) { return grads + t[i].offset; };
  // dres holds d(out); the residual adds pass it through unchanged, so every branch's input
  // gradient accumulates into the same buffer and it ends as d(x).
  Zero(s.dfch_gelu, 4 * NC);
  k.linear_backward(s.dfch_gelu, g(kFcProjW), g(kFcProjB), dres, a.fch_gelu, p(kFcProjW),
                    N, 4 * C, C);
  Zero(s.dfch, 4 * NC);
  k.gelu_backward(s.dfch, a.fch, s.dfch_gelu, 4 * NC);
  Zero(s.dln, NC);
  k.linear_backward(s.dln, g(kFcW), g(kFcB), s.dfch, a.ln2, p(kFcW), N, C, 4 * C);
  k.layernorm_backward(dres, g(kLn2W), g(kLn2B), s.dln, a.res2, p(kLn2W), a.ln2_mean,
                       a.ln2_rstd, N, C);
  Zero(s.datty, NC);
  k.linear_backward(s.datty, g(kAttProjW), g(kAttProjB), dres, a.atty, p(kAttProjW), N, C, C);
  Zero(s.dqkv, 3 * NC);
  k.attention_backward(s.dqkv, s.datt, s.datty, a.qkv, a.att, B, T, C, c.n_head);
  Zero(s.dln, NC);
  k.linear_backward(s.dln, g(kQkvW), g(kQkvB), s.dqkv, a.ln1, p(kQkvW), N, C, 3 * C);
  k.layernorm_backward(dres, g(kLn1W), g(kLn1B), s.dln, x, p(kLn1W), a.ln1_mean, a.ln1_rstd, N, C);
}

float HeadForward(const KernelTable& k, const GptLayout& layout, const float* params,
                  const float* wte, const float* x, const int32_t* targets, int B, int T,
                  const HeadActs& a) {
  const auto& t = layout.head().tensors;
  const GptConfig& c = layout.config;
  const int N = B * T, C = c.n_embd, V = c.vocab_size;
  k.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, x, params + t[kLnfW].offset,
                      params + t[kLnfB].offset, N, C);
  // logits (N, V) = lnf (N, C) @ wte^T; wte is (V, C).
  k.sgemm(false, true, N, V, C, 1.0f, a.lnf, C, wte, C, 0.0f, a.logits, V);
  return k.crossentropy_forward(a.probs, a.logits, targets, N, V);
}

void HeadBackward(const KernelTable& k, const GptLayout& layout, const float* params, float* grads,
                  const float* wte, float* dwte, const float* x, const int32_t* targets, int B,
                  int T, const HeadActs& a, const BackwardScratch& s, float dloss, float* dres) {
  const auto& t = layout.head().tensors;
  const GptConfig& c = layout.config;
  const int N = B * T, C = c.n_embd, V = c.vocab_size;
  Zero(s.dlogits, int64_t(N) * V);
  k.crossentropy_backward(s.dlogits, a.probs, targets, dloss, N, V);
  // dlnf (N, C) = dlogits (N, V) @ wte (V, C); dwte (V, C) += dlogits^T @ lnf.
  k.sgemm(false, false, N, C, V, 1.0f, s.dlogits, V, wte, C, 0.0f, s.dln, C);
  k.sgemm(true, false, V, C, N, 1.0f, s.dlogits, V, a.lnf, C, 1.0f, dwte, C);
  Zero(dres, int64_t(N) * C);
  k.layernorm_backward(dres, grads + t[kLnfW].offset, grads + t[kLnfB].offset, s.dln, x,
                       params + t[kLnfW].offset, a.lnf_mean, a.lnf_rstd, N, C);
}

}  // namespace strata
