#include "models/gpt2/gpt_blocks.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/kernels/linear.h"
#include "core/nn/gradient_contribution.h"
#include "core/nn/parallel_linear.h"
#include "core/nn/tp_layout.h"
#include "core/util/check.h"

namespace strata {
namespace {

using nn_internal::Align;
using nn_internal::Contribute;
using nn_internal::Zero;

using Carver = FloatCarver;

// The widths a rank's activations have: the whole model's, or tensor-parallel rank's slice of
// them (tp > 1, Note [Tensor-parallel slices] in tp_layout.h): C / tp attention and MLP columns,
// n_head / tp heads, the padded vocabulary / tp logits; the residual stream stays C wide.
struct Widths {
  int64_t C, Cl, heads, V, grad_scratch;
};

Widths WidthsOf(const GptConfig& c, int T, int tp) {
  STRATA_CHECK(tp >= 1 && c.n_embd % tp == 0 && c.n_head % tp == 0);
  return {c.n_embd, c.n_embd / tp, c.n_head / tp,
          tp > 1 ? TpPaddedVocab(c) / tp : int64_t(c.vocab_size), GradScratchFloats(c, T)};
}

TransformerActs Carve(const Widths& w, int B, int T, Carver& k) {
  const int64_t BT = int64_t(B) * T, C = w.C, Cl = w.Cl;
  TransformerActs a;
  a.ln1 = k.take(BT * C);
  a.ln1_mean = k.take(BT);
  a.ln1_rstd = k.take(BT);
  a.qkv = k.take(BT * 3 * Cl);
  a.atty = k.take(BT * Cl);
  a.att = k.take(int64_t(B) * w.heads * T * T);
  a.res2 = k.take(BT * C);
  a.ln2 = k.take(BT * C);
  a.ln2_mean = k.take(BT);
  a.ln2_rstd = k.take(BT);
  a.fch = k.take(BT * 4 * Cl);
  a.fch_gelu = k.take(BT * 4 * Cl);
  a.out = k.take(BT * C);
  return a;
}

HeadActs CarveHead(const Widths& w, int B, int T, Carver& k) {
  const int64_t BT = int64_t(B) * T;
  HeadActs a;
  a.lnf = k.take(BT * w.C);
  a.lnf_mean = k.take(BT);
  a.lnf_rstd = k.take(BT);
  a.logits = k.take(BT * w.V);
  a.probs = k.take(BT * w.V);
  return a;
}

BackwardScratch CarveScratch(const Widths& w, int B, int T, Carver& k) {
  const int64_t BT = int64_t(B) * T, C = w.C, Cl = w.Cl;
  BackwardScratch s;
  s.dfch_gelu = k.take(BT * 4 * Cl);
  s.dfch = k.take(BT * 4 * Cl);
  s.dln = k.take(BT * C);
  s.datty = k.take(BT * Cl);
  s.dqkv = k.take(BT * 3 * Cl);
  s.datt = k.take(int64_t(B) * w.heads * T * T);
  s.dlogits = k.take(BT * w.V);
  s.dparam = k.take(w.grad_scratch);
  return s;
}

// One layout function per struct serves both needs: run over a null base it only counts.
template <typename Parts>
int64_t FloatsOf(Parts (*carve)(const Widths&, int, int, Carver&), const GptConfig& c, int B, int T,
                 int tp) {
  Carver k(nullptr);
  carve(WidthsOf(c, T, tp), B, T, k);
  return k.used();
}
template <typename Parts>
Parts CarveFrom(Parts (*carve)(const Widths&, int, int, Carver&), const GptConfig& c, int B, int T,
                int tp, float* base) {
  Carver k(base);
  return carve(WidthsOf(c, T, tp), B, T, k);
}

}  // namespace

int64_t TransformerActsFloats(const GptConfig& c, int B, int T, int tp) {
  return FloatsOf(Carve, c, B, T, tp);
}
TransformerActs CarveTransformerActs(const GptConfig& c, int B, int T, float* base, int tp) {
  return CarveFrom(Carve, c, B, T, tp, base);
}
int64_t HeadActsFloats(const GptConfig& c, int B, int T, int tp) {
  return FloatsOf(CarveHead, c, B, T, tp);
}
HeadActs CarveHeadActs(const GptConfig& c, int B, int T, float* base, int tp) {
  return CarveFrom(CarveHead, c, B, T, tp, base);
}
int64_t GradScratchFloats(const GptConfig& c, int T) {
  const int64_t C = c.n_embd;
  // The largest group one call makes: the MLP's weight and bias, or wpe's T rows.
  return std::max(Align(4 * C * C) + Align(4 * C), Align(int64_t(T) * C));
}

int GradSliceRows(const GptConfig& c, int T) {
  return int(std::min<int64_t>(c.vocab_size, GradScratchFloats(c, T) / c.n_embd));
}

int64_t BackwardScratchFloats(const GptConfig& c, int B, int T, int tp) {
  return FloatsOf(CarveScratch, c, B, T, tp);
}
BackwardScratch CarveBackwardScratch(const GptConfig& c, int B, int T, float* base, int tp) {
  return CarveFrom(CarveScratch, c, B, T, tp, base);
}

void EmbeddingForward(const KernelTable& k, const GptLayout& layout, const float* params,
                      const int32_t* tokens, int B, int T, float* out) {
  const auto& spec = layout.embedding();
  k.embedding_forward(out, tokens, params + spec.tensors[kWte].offset,
                      params + spec.tensors[kWpe].offset, B, T, layout.config.n_embd);
}

void EmbeddingBackward(const KernelTable& k, const GptLayout& layout, float* grads,
                       const float* dres, const int32_t* tokens, int B, int T,
                       const BackwardScratch& s, bool first_wpe, bool first_wte) {
  const auto& spec = layout.embedding();
  const int C = layout.config.n_embd, V = layout.config.vocab_size;
  float* dwpe = grads + spec.tensors[kWpe].offset;
  Contribute<1>(k, first_wpe, s.dparam, {{{dwpe, int64_t(T) * C}}},
                [&](auto& d) { k.embedding_backward(nullptr, d[0], dres, tokens, B, T, C, 0, 0); });
  float* dwte = grads + spec.tensors[kWte].offset;
  const int rows = GradSliceRows(layout.config, T);
  for (int v0 = 0; v0 < V; v0 += rows) {
    const int r = std::min(rows, V - v0);
    Contribute<1>(
        k, first_wte, s.dparam, {{{dwte + int64_t(v0) * C, int64_t(r) * C}}},
        [&](auto& d) { k.embedding_backward(d[0], nullptr, dres, tokens, B, T, C, v0, v0 + r); });
  }
}

TransformerWeights WholeTransformerWeights(const GptLayout& layout, int layer,
                                           const float* params) {
  TransformerWeights w;
  const auto& t = layout.transformer(layer).tensors;
  for (int i = 0; i < kTransformerTensors; ++i) w.tensor[i] = params + t[i].offset;
  return w;
}

void TransformerForward(const KernelTable& k, const GptLayout& layout, int layer,
                        const float* params, const float* x, int B, int T, const TransformerActs& a,
                        const TpGroup* tp) {
  TransformerForward(k, layout, layer, WholeTransformerWeights(layout, layer, params), x, B, T, a,
                     tp);
}

void TransformerBackward(const KernelTable& k, const GptLayout& layout, int layer,
                         const float* params, float* grads, const float* x, int B, int T,
                         const TransformerActs& a, const BackwardScratch& s, float* dres,
                         bool first, const TpGroup* tp) {
  TransformerBackward(k, layout, layer, WholeTransformerWeights(layout, layer, params), grads, x, B,
                      T, a, s, dres, first, tp);
}

namespace {

// The block's widths from its (perhaps tensor-parallel) layout: C, the residual stream, whole;
// Cl columns of attention (a tp rank's heads), 4 Cl of the MLP.
struct BlockWidths {
  int C, Cl, heads;
};

BlockWidths BlockWidthsOf(const GptLayout& layout, int layer) {
  const BlockSpec& b = layout.transformer(layer);
  const int C = layout.config.n_embd;
  const int Cl = int(b.tensors[kQkvW].shape[1] / 3);
  return {C, Cl, int(int64_t(layout.config.n_head) * Cl / C)};
}

}  // namespace

// On a tensor-parallel rank (`tp`), the rules of the block's weights complete the partial sums
// (core/nn/parallel_linear.h, Note [Rules imply the all-reduces]): the row-parallel outputs
// (attn.c_proj, mlp.c_proj, their replicated biases added once) and the column-parallel input
// gradients (c_attn, c_fc). A tp block equals the whole block up to float rounding.
void TransformerForward(const KernelTable& k, const GptLayout& layout, int layer,
                        const TransformerWeights& w, const float* x, int B, int T,
                        const TransformerActs& a, const TpGroup* tp) {
  const auto& t = layout.transformer(layer).tensors;
  const auto [C, Cl, heads] = BlockWidthsOf(layout, layer);
  const int N = B * T;
  auto p = [&](int i) { return w.tensor[i]; };
  // A split weight's forward, slice by slice: the same chunks in the same order as whole.
  auto linear = [&](float* out, const float* inp, int wi, int bi, int in_c, int out_c) {
    const float* bias = RowParallelBias(tp, t[wi], p(bi));
    if (w.tensor[wi] != nullptr) {
      k.linear_forward(out, inp, p(wi), bias, N, in_c, out_c);
    } else {
      for (int s = 0; s < w.slices; ++s) {
        const auto [r0, r1] = LinearSliceRows(in_c, w.slices, s);
        k.linear_forward_rows(out, inp, w.slice(wi, s), bias, N, in_c, out_c, r0, r1);
      }
    }
    CompleteRowParallelOutput(tp, t[wi], out, int64_t(N) * out_c);
  };
  k.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, p(kLn1W), p(kLn1B), N, C);
  linear(a.qkv, a.ln1, kQkvW, kQkvB, C, 3 * Cl);
  k.attention_forward(a.atty, a.att, a.qkv, B, T, Cl, heads);
  linear(a.res2, a.atty, kAttProjW, kAttProjB, Cl, C);
  k.residual_forward(a.res2, a.res2, x, int64_t(N) * C);
  k.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, p(kLn2W), p(kLn2B), N, C);
  linear(a.fch, a.ln2, kFcW, kFcB, C, 4 * Cl);
  k.gelu_forward(a.fch_gelu, a.fch, int64_t(N) * 4 * Cl);
  linear(a.out, a.fch_gelu, kFcProjW, kFcProjB, 4 * Cl, C);
  k.residual_forward(a.out, a.out, a.res2, int64_t(N) * C);
}

void TransformerBackward(const KernelTable& k, const GptLayout& layout, int layer,
                         const TransformerWeights& w, float* grads, const float* x, int B, int T,
                         const TransformerActs& a, const BackwardScratch& s, float* dres,
                         bool first, const TpGroup* tp) {
  const auto& t = layout.transformer(layer).tensors;
  const auto [C, Cl, heads] = BlockWidthsOf(layout, layer);
  const int N = B * T;
  const int64_t NC = int64_t(N) * C, NCl = int64_t(N) * Cl;
  auto p = [&](int i) { return w.tensor[i]; };
  auto g = [&](int i) { return grads + t[i].offset; };
  // Each call below makes one contribution to a weight and its bias (Note [Gradient
  // contributions]); the input gradients (dinp) are the step's activations, not summed over it.
  // A split weight's slices each make their rows of it (and of dinp's columns): the whole bits.
  auto linear = [&](float* dinp, int wi, int bi, const float* dout, const float* inp, int in_c,
                    int out_c) {
    Contribute<2>(
        k, first, s.dparam, {{{g(wi), int64_t(in_c) * out_c}, {g(bi), out_c}}}, [&](auto& d) {
          if (w.tensor[wi] != nullptr) {
            k.linear_backward(dinp, d[0], d[1], dout, inp, p(wi), N, in_c, out_c);
            return;
          }
          for (int sl = 0; sl < w.slices; ++sl) {
            const auto [r0, r1] = LinearSliceRows(in_c, w.slices, sl);
            k.linear_backward_rows(dinp, d[0] + int64_t(r0) * out_c, sl == 0 ? d[1] : nullptr, dout,
                                   inp, w.slice(wi, sl), N, in_c, out_c, r0, r1);
          }
        });
    CompleteColumnParallelInputGrad(tp, t[wi], dinp, int64_t(N) * in_c);
  };
  auto layernorm = [&](int wi, int bi, const float* dout, const float* inp, const float* mean,
                       const float* rstd) {
    Contribute<2>(k, first, s.dparam, {{{g(wi), C}, {g(bi), C}}}, [&](auto& d) {
      k.layernorm_backward(dres, d[0], d[1], dout, inp, p(wi), mean, rstd, N, C);
    });
  };
  // dres holds d(out); the residual adds pass it through unchanged, so every branch's input
  // gradient accumulates into the same buffer and it ends as d(x).
  Zero(k, s.dfch_gelu, 4 * NCl);
  linear(s.dfch_gelu, kFcProjW, kFcProjB, dres, a.fch_gelu, 4 * Cl, C);
  Zero(k, s.dfch, 4 * NCl);
  k.gelu_backward(s.dfch, a.fch, s.dfch_gelu, 4 * NCl);
  Zero(k, s.dln, NC);
  linear(s.dln, kFcW, kFcB, s.dfch, a.ln2, C, 4 * Cl);
  layernorm(kLn2W, kLn2B, s.dln, a.res2, a.ln2_mean, a.ln2_rstd);
  Zero(k, s.datty, NCl);
  linear(s.datty, kAttProjW, kAttProjB, dres, a.atty, Cl, C);
  Zero(k, s.dqkv, 3 * NCl);
  k.attention_backward(s.dqkv, s.datt, s.datty, a.qkv, a.att, B, T, Cl, heads);
  Zero(k, s.dln, NC);
  linear(s.dln, kQkvW, kQkvB, s.dqkv, a.ln1, C, 3 * Cl);
  layernorm(kLn1W, kLn1B, s.dln, x, a.ln1_mean, a.ln1_rstd);
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
                  int T, const HeadActs& a, const BackwardScratch& s, float dloss, float* dres,
                  bool first) {
  const GptConfig& c = layout.config;
  const int N = B * T, C = c.n_embd, V = c.vocab_size;
  Zero(k, s.dlogits, int64_t(N) * V);
  k.crossentropy_backward(s.dlogits, a.probs, targets, dloss, N, V);
  // dlnf (N, C) = dlogits (N, V) @ wte (V, C); dwte (V, C) += dlogits^T @ lnf, in slices of
  // rows (Note [Gradient contributions]).
  k.sgemm(false, false, N, C, V, 1.0f, s.dlogits, V, wte, C, 0.0f, s.dln, C);
  HeadParamsBackward(k, layout, params, grads, dwte, V, V, x, B, T, a, s, dres, first);
}

void HeadParamsBackward(const KernelTable& k, const GptLayout& layout, const float* params,
                        float* grads, float* dwte, int wte_rows, int ld_logits, const float* x,
                        int B, int T, const HeadActs& a, const BackwardScratch& s, float* dres,
                        bool first) {
  const auto& t = layout.head().tensors;
  const int N = B * T, C = layout.config.n_embd;
  const int rows = GradSliceRows(layout.config, T);
  for (int v0 = 0; v0 < wte_rows; v0 += rows) {
    const int r = std::min(rows, wte_rows - v0);
    Contribute<1>(k, first, s.dparam, {{{dwte + int64_t(v0) * C, int64_t(r) * C}}}, [&](auto& d) {
      k.sgemm(true, false, r, C, N, 1.0f, s.dlogits + v0, ld_logits, a.lnf, C, 1.0f, d[0], C);
    });
  }
  Zero(k, dres, int64_t(N) * C);
  float* dlnf_w = grads + t[kLnfW].offset;
  float* dlnf_b = grads + t[kLnfB].offset;
  Contribute<2>(k, first, s.dparam, {{{dlnf_w, C}, {dlnf_b, C}}}, [&](auto& d) {
    k.layernorm_backward(dres, d[0], d[1], s.dln, x, params + t[kLnfW].offset, a.lnf_mean,
                         a.lnf_rstd, N, C);
  });
}

}  // namespace strata
