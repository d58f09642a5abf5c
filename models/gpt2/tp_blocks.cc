#include "models/gpt2/tp_blocks.h"

#include "core/nn/gradient_contribution.h"

namespace strata {
namespace {

using nn_internal::Contribute;
using nn_internal::Zero;

// The slice's widths: Cl = C / tp columns of attention, H / tp heads, 4Cl of the MLP.
struct TpWidths {
  int C, Cl, heads;
};

TpWidths WidthsOf(const GptLayout& layout, int layer) {
  const BlockSpec& b = layout.transformer(layer);
  const int C = layout.config.n_embd;
  const int Cl = int(b.tensors[kQkvW].shape[1] / 3);
  return {C, Cl, layout.config.n_head / (C / Cl)};
}

}  // namespace

void TpTransformerForward(const KernelTable& k, const GptLayout& layout, int layer, int tp_rank,
                          const float* params, const float* x, int B, int T,
                          const TransformerActs& a, const TpAllReduce& all_reduce) {
  const auto& t = layout.transformer(layer).tensors;
  const auto [C, Cl, heads] = WidthsOf(layout, layer);
  const int N = B * T;
  auto p = [&](int i) { return params + t[i].offset; };
  auto once = [&](int bias) { return tp_rank == 0 ? p(bias) : nullptr; };  // Note above
  k.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, p(kLn1W), p(kLn1B), N, C);
  k.linear_forward(a.qkv, a.ln1, p(kQkvW), p(kQkvB), N, C, 3 * Cl);
  k.attention_forward(a.atty, a.att, a.qkv, B, T, Cl, heads);
  k.linear_forward(a.res2, a.atty, p(kAttProjW), once(kAttProjB), N, Cl, C);
  all_reduce(a.res2, int64_t(N) * C);
  k.residual_forward(a.res2, a.res2, x, int64_t(N) * C);
  k.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, p(kLn2W), p(kLn2B), N, C);
  k.linear_forward(a.fch, a.ln2, p(kFcW), p(kFcB), N, C, 4 * Cl);
  k.gelu_forward(a.fch_gelu, a.fch, int64_t(N) * 4 * Cl);
  k.linear_forward(a.out, a.fch_gelu, p(kFcProjW), once(kFcProjB), N, 4 * Cl, C);
  all_reduce(a.out, int64_t(N) * C);
  k.residual_forward(a.out, a.out, a.res2, int64_t(N) * C);
}

void TpTransformerBackward(const KernelTable& k, const GptLayout& layout, int layer,
                           int /*tp_rank*/, const float* params, float* grads, const float* x,
                           int B, int T, const TransformerActs& a, const BackwardScratch& s,
                           float* dres, bool first, const TpAllReduce& all_reduce) {
  const auto& t = layout.transformer(layer).tensors;
  const auto [C, Cl, heads] = WidthsOf(layout, layer);
  const int N = B * T;
  const int64_t NC = int64_t(N) * C, NCl = int64_t(N) * Cl;
  auto p = [&](int i) { return params + t[i].offset; };
  auto g = [&](int i) { return grads + t[i].offset; };
  auto linear = [&](float* dinp, int wi, int bi, const float* dout, const float* inp, int in_c,
                    int out_c) {
    Contribute<2>(
        k, first, s.dparam, {{{g(wi), int64_t(in_c) * out_c}, {g(bi), out_c}}},
        [&](auto& d) { k.linear_backward(dinp, d[0], d[1], dout, inp, p(wi), N, in_c, out_c); });
  };
  auto layernorm = [&](int wi, int bi, const float* dout, const float* inp, const float* mean,
                       const float* rstd) {
    Contribute<2>(k, first, s.dparam, {{{g(wi), C}, {g(bi), C}}}, [&](auto& d) {
      k.layernorm_backward(dres, d[0], d[1], dout, inp, p(wi), mean, rstd, N, C);
    });
  };
  Zero(k, s.dfch_gelu, 4 * NCl);
  linear(s.dfch_gelu, kFcProjW, kFcProjB, dres, a.fch_gelu, 4 * Cl, C);  // row-parallel
  Zero(k, s.dfch, 4 * NCl);
  k.gelu_backward(s.dfch, a.fch, s.dfch_gelu, 4 * NCl);
  Zero(k, s.dln, NC);
  linear(s.dln, kFcW, kFcB, s.dfch, a.ln2, C, 4 * Cl);  // column-parallel: a partial sum
  all_reduce(s.dln, NC);
  layernorm(kLn2W, kLn2B, s.dln, a.res2, a.ln2_mean, a.ln2_rstd);
  Zero(k, s.datty, NCl);
  linear(s.datty, kAttProjW, kAttProjB, dres, a.atty, Cl, C);  // row-parallel
  Zero(k, s.dqkv, 3 * NCl);
  k.attention_backward(s.dqkv, s.datt, s.datty, a.qkv, a.att, B, T, Cl, heads);
  Zero(k, s.dln, NC);
  linear(s.dln, kQkvW, kQkvB, s.dqkv, a.ln1, C, 3 * Cl);  // column-parallel: a partial sum
  all_reduce(s.dln, NC);
  layernorm(kLn1W, kLn1B, s.dln, x, a.ln1_mean, a.ln1_rstd);
}

}  // namespace strata
