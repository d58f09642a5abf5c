#include "models/llama/llama_block.h"

#include "core/nn/block_spec.h"
#include "core/nn/parallel_linear.h"
#include "models/llama/llama_layout.h"

namespace strata::models {
namespace {

// The widths of one tensor-parallel rank's slice of `tp` (Note [Tensor-parallel slices] in
// core/nn/tp_layout.h): whole heads of q and of k/v, a T-th of the MLP; C, the residual stream, is
// whole. tp = 1: the whole layer.
struct Sizes {
  int heads, kv_heads;
  int64_t BT, C, Q, KV, ld, F, att;
  Sizes(const LlamaConfig& c, int B, int T, int tp)
      : heads(c.n_head / tp),
        kv_heads(c.n_kv_head / tp),
        BT(int64_t(B) * T),
        C(c.n_embd),
        Q(int64_t(heads) * c.head_dim()),
        KV(int64_t(kv_heads) * c.head_dim()),
        ld(Q + 2 * KV),
        F(c.ffn_dim / tp),
        att(int64_t(B) * heads * T * T) {}
};

int GroupSize(const TpGroup* tp) { return tp != nullptr ? tp->size : 1; }

using Carver = FloatCarver;

LlamaBlockActs Acts(const LlamaConfig& c, int B, int T, int tp, Carver& m) {
  const Sizes s(c, B, T, tp);
  LlamaBlockActs a;
  a.h1 = m.take(s.BT * s.C);
  a.rstd1 = m.take(s.BT);
  a.qkv = m.take(s.BT * s.ld);
  a.atty = m.take(s.BT * s.Q);
  a.att = m.take(s.att);
  a.res = m.take(s.BT * s.C);
  a.h2 = m.take(s.BT * s.C);
  a.rstd2 = m.take(s.BT);
  a.gu = m.take(s.BT * 2 * s.F);
  a.mlp = m.take(s.BT * s.F);
  a.out = m.take(s.BT * s.C);
  return a;
}

LlamaBlockScratch Scratch(const LlamaConfig& c, int B, int T, int tp, Carver& m) {
  const Sizes s(c, B, T, tp);
  LlamaBlockScratch d;
  d.dmlp = m.take(s.BT * s.F);
  d.dgu = m.take(s.BT * 2 * s.F);
  d.dh = m.take(s.BT * s.C);
  d.datty = m.take(s.BT * s.Q);
  d.dqkv = m.take(s.BT * s.ld);
  d.datt = m.take(s.att);
  return d;
}

}  // namespace

int64_t LlamaBlockActsFloats(const LlamaConfig& c, int B, int T, int tp) {
  Carver m(nullptr);
  Acts(c, B, T, tp, m);
  return m.used();
}

LlamaBlockActs CarveLlamaBlockActs(const LlamaConfig& c, int B, int T, float* base, int tp) {
  Carver m(base);
  return Acts(c, B, T, tp, m);
}

int64_t LlamaBlockScratchFloats(const LlamaConfig& c, int B, int T, int tp) {
  Carver m(nullptr);
  Scratch(c, B, T, tp, m);
  return m.used();
}

LlamaBlockScratch CarveLlamaBlockScratch(const LlamaConfig& c, int B, int T, float* base, int tp) {
  Carver m(base);
  return Scratch(c, B, T, tp, m);
}

// Every projection goes through core/nn/parallel_linear.h, which completes a row-parallel output
// (o, down) and a column-parallel input gradient (q/k/v, gate/up) over the tp group (Note [Rules
// imply the all-reduces]), and computes the MLP's split weights by row ranges, whole or slice by
// slice, with the same bits (Note [Linears in row chunks]).
void LlamaBlockForward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                       const SplitWeights& w, const float* cos, const float* sin, const float* x,
                       int B, int T, const LlamaBlockActs& a, const TpGroup* tp) {
  const Sizes s(c, B, T, GroupSize(tp));
  auto project = [&](int tensor, const float* in, float* y, int64_t ldy) {
    LinearForward(k, tp, {spec.tensors[size_t(tensor)], w, tensor}, in, s.BT, y, ldy);
  };
  k.rmsnorm_forward(a.h1, a.rstd1, x, w.tensor[kInputNorm], int(s.BT), int(s.C), c.norm_eps);
  project(kQProj, a.h1, a.qkv, s.ld);
  project(kKProj, a.h1, a.qkv + s.Q, s.ld);
  project(kVProj, a.h1, a.qkv + s.Q + s.KV, s.ld);
  k.rope_forward(a.qkv, cos, sin, B, T, int(s.ld), s.heads + s.kv_heads, c.head_dim());
  k.gqa_attention_forward(a.atty, a.att, a.qkv, B, T, int(s.Q), s.heads, s.kv_heads);
  project(kOProj, a.atty, a.res, s.C);
  k.residual_forward(a.res, x, a.res, s.BT * s.C);  // element-wise: out may alias b
  k.rmsnorm_forward(a.h2, a.rstd2, a.res, w.tensor[kPostNorm], int(s.BT), int(s.C), c.norm_eps);
  project(kGateProj, a.h2, a.gu, 2 * s.F);
  project(kUpProj, a.h2, a.gu + s.F, 2 * s.F);
  k.swiglu_forward(a.mlp, a.gu, s.BT, int(s.F));
  project(kDownProj, a.mlp, a.out, s.C);
  k.residual_forward(a.out, a.res, a.out, s.BT * s.C);
}

void LlamaBlockForward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                       const float* params, const float* cos, const float* sin, const float* x,
                       int B, int T, const LlamaBlockActs& a, const TpGroup* tp) {
  LlamaBlockForward(k, c, spec, WholeWeights(spec, params), cos, sin, x, B, T, a, tp);
}

// The split weights' slices are asked for in reverse layout order (core/nn/split_weights.h):
// down, then up, then gate.
void LlamaBlockBackward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                        const SplitWeights& w, float* grads, const float* cos, const float* sin,
                        const float* x, int B, int T, const LlamaBlockActs& a,
                        const LlamaBlockScratch& d, float* dres, const TpGroup* tp) {
  const Sizes s(c, B, T, GroupSize(tp));
  const LlamaBlockGrads g = LayerGrads(spec, grads);
  auto part = [&](int tensor, float* dw, const float* dy, int64_t ldy) {
    return LinearGrad{{spec.tensors[size_t(tensor)], w, tensor}, dw, dy, ldy};
  };
  // The MLP: dres is d(out) = d(res) along the residual; the branch adds through post_norm.
  LinearsBackward(k, tp, a.mlp, s.BT, {part(kDownProj, g.down, dres, s.C)}, d.dmlp);
  k.zero(d.dgu, s.BT * 2 * s.F);
  k.swiglu_backward(d.dgu, d.dmlp, a.gu, s.BT, int(s.F));
  LinearsBackward(
      k, tp, a.h2, s.BT,
      {part(kUpProj, g.up, d.dgu + s.F, 2 * s.F), part(kGateProj, g.gate, d.dgu, 2 * s.F)}, d.dh);
  k.rmsnorm_backward(dres, g.post_norm, d.dh, a.res, w.tensor[kPostNorm], a.rstd2, int(s.BT),
                     int(s.C));
  // Attention: dres is now d(res) = d(x) along the residual; the branch adds through input_norm.
  LinearsBackward(k, tp, a.atty, s.BT, {part(kOProj, g.o, dres, s.C)}, d.datty);
  k.zero(d.dqkv, s.BT * s.ld);
  k.gqa_attention_backward(d.dqkv, d.datt, d.datty, a.qkv, a.att, B, T, int(s.Q), s.heads,
                           s.kv_heads);
  k.rope_backward(d.dqkv, cos, sin, B, T, int(s.ld), s.heads + s.kv_heads, c.head_dim());
  LinearsBackward(k, tp, a.h1, s.BT,
                  {part(kQProj, g.q, d.dqkv, s.ld), part(kKProj, g.k, d.dqkv + s.Q, s.ld),
                   part(kVProj, g.v, d.dqkv + s.Q + s.KV, s.ld)},
                  d.dh);
  k.rmsnorm_backward(dres, g.input_norm, d.dh, x, w.tensor[kInputNorm], a.rstd1, int(s.BT),
                     int(s.C));
}

void LlamaBlockBackward(const KernelTable& k, const LlamaConfig& c, const BlockSpec& spec,
                        const float* params, float* grads, const float* cos, const float* sin,
                        const float* x, int B, int T, const LlamaBlockActs& a,
                        const LlamaBlockScratch& d, float* dres, const TpGroup* tp) {
  LlamaBlockBackward(k, c, spec, WholeWeights(spec, params), grads, cos, sin, x, B, T, a, d, dres,
                     tp);
}

}  // namespace strata::models
