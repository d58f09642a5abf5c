#include "models/llama/llama_block.h"

#include "core/nn/block_spec.h"

namespace strata::models {
namespace {

struct Sizes {
  int64_t BT, C, KV, ld, F, att;
  Sizes(const LlamaConfig& c, int B, int T)
      : BT(int64_t(B) * T),
        C(c.n_embd),
        KV(int64_t(c.n_kv_head) * c.head_dim()),
        ld(C + 2 * KV),
        F(c.ffn_dim),
        att(int64_t(B) * c.n_head * T * T) {}
};

using Carver = FloatCarver;

LlamaBlockActs Acts(const LlamaConfig& c, int B, int T, Carver& m) {
  const Sizes s(c, B, T);
  LlamaBlockActs a;
  a.h1 = m.take(s.BT * s.C);
  a.rstd1 = m.take(s.BT);
  a.qkv = m.take(s.BT * s.ld);
  a.atty = m.take(s.BT * s.C);
  a.att = m.take(s.att);
  a.res = m.take(s.BT * s.C);
  a.h2 = m.take(s.BT * s.C);
  a.rstd2 = m.take(s.BT);
  a.gu = m.take(s.BT * 2 * s.F);
  a.mlp = m.take(s.BT * s.F);
  a.out = m.take(s.BT * s.C);
  return a;
}

LlamaBlockScratch Scratch(const LlamaConfig& c, int B, int T, Carver& m) {
  const Sizes s(c, B, T);
  LlamaBlockScratch d;
  d.dmlp = m.take(s.BT * s.F);
  d.dgu = m.take(s.BT * 2 * s.F);
  d.dh = m.take(s.BT * s.C);
  d.datty = m.take(s.BT * s.C);
  d.dqkv = m.take(s.BT * s.ld);
  d.datt = m.take(s.att);
  return d;
}

// y (rows, ldy) columns [0, out) = x (rows, in) @ W^T, W (out, in) as nn.Linear stores it.
void Project(const KernelTable& k, const float* x, int64_t rows, int64_t in, const float* w,
             int64_t out, float* y, int64_t ldy) {
  k.sgemm(false, true, int(rows), int(out), int(in), 1.0f, x, int(in), w, int(in), 0.0f, y,
          int(ldy));
}

// The backward of Project: dx (rows, in) += dy @ W (beta 0 when `first`), dW += dy^T @ x.
void ProjectBackward(const KernelTable& k, const float* x, int64_t rows, int64_t in,
                     const float* w, int64_t out, const float* dy, int64_t ldy, float* dx,
                     float* dw, bool first) {
  k.sgemm(false, false, int(rows), int(in), int(out), 1.0f, dy, int(ldy), w, int(in),
          first ? 0.0f : 1.0f, dx, int(in));
  k.sgemm(true, false, int(out), int(in), int(rows), 1.0f, dy, int(ldy), x, int(in), 1.0f, dw,
          int(in));
}

}  // namespace

int64_t LlamaBlockActsFloats(const LlamaConfig& c, int B, int T) {
  Carver m(nullptr);
  Acts(c, B, T, m);
  return m.used();
}

LlamaBlockActs CarveLlamaBlockActs(const LlamaConfig& c, int B, int T, float* base) {
  Carver m(base);
  return Acts(c, B, T, m);
}

int64_t LlamaBlockScratchFloats(const LlamaConfig& c, int B, int T) {
  Carver m(nullptr);
  Scratch(c, B, T, m);
  return m.used();
}

LlamaBlockScratch CarveLlamaBlockScratch(const LlamaConfig& c, int B, int T, float* base) {
  Carver m(base);
  return Scratch(c, B, T, m);
}

void LlamaBlockForward(const KernelTable& k, const LlamaConfig& c, const LlamaBlockTensors& w,
                       const float* cos, const float* sin, const float* x, int B, int T,
                       const LlamaBlockActs& a) {
  const Sizes s(c, B, T);
  k.rmsnorm_forward(a.h1, a.rstd1, x, w.input_norm, int(s.BT), int(s.C), c.norm_eps);
  Project(k, a.h1, s.BT, s.C, w.q, s.C, a.qkv, s.ld);
  Project(k, a.h1, s.BT, s.C, w.k, s.KV, a.qkv + s.C, s.ld);
  Project(k, a.h1, s.BT, s.C, w.v, s.KV, a.qkv + s.C + s.KV, s.ld);
  k.rope_forward(a.qkv, cos, sin, B, T, int(s.ld), c.n_head + c.n_kv_head, c.head_dim());
  k.gqa_attention_forward(a.atty, a.att, a.qkv, B, T, int(s.C), c.n_head, c.n_kv_head);
  Project(k, a.atty, s.BT, s.C, w.o, s.C, a.res, s.C);
  k.residual_forward(a.res, x, a.res, s.BT * s.C);  // element-wise: out may alias b
  k.rmsnorm_forward(a.h2, a.rstd2, a.res, w.post_norm, int(s.BT), int(s.C), c.norm_eps);
  Project(k, a.h2, s.BT, s.C, w.gate, s.F, a.gu, 2 * s.F);
  Project(k, a.h2, s.BT, s.C, w.up, s.F, a.gu + s.F, 2 * s.F);
  k.swiglu_forward(a.mlp, a.gu, s.BT, int(s.F));
  Project(k, a.mlp, s.BT, s.F, w.down, s.C, a.out, s.C);
  k.residual_forward(a.out, a.res, a.out, s.BT * s.C);
}

void LlamaBlockBackward(const KernelTable& k, const LlamaConfig& c, const LlamaBlockTensors& w,
                        const LlamaBlockGrads& g, const float* cos, const float* sin,
                        const float* x, int B, int T, const LlamaBlockActs& a,
                        const LlamaBlockScratch& d, float* dres) {
  const Sizes s(c, B, T);
  // The MLP: dres is d(out) = d(res) along the residual; the branch adds through post_norm.
  ProjectBackward(k, a.mlp, s.BT, s.F, w.down, s.C, dres, s.C, d.dmlp, g.down, true);
  k.zero(d.dgu, s.BT * 2 * s.F);
  k.swiglu_backward(d.dgu, d.dmlp, a.gu, s.BT, int(s.F));
  ProjectBackward(k, a.h2, s.BT, s.C, w.gate, s.F, d.dgu, 2 * s.F, d.dh, g.gate, true);
  ProjectBackward(k, a.h2, s.BT, s.C, w.up, s.F, d.dgu + s.F, 2 * s.F, d.dh, g.up, false);
  k.rmsnorm_backward(dres, g.post_norm, d.dh, a.res, w.post_norm, a.rstd2, int(s.BT), int(s.C));
  // Attention: dres is now d(res) = d(x) along the residual; the branch adds through input_norm.
  ProjectBackward(k, a.atty, s.BT, s.C, w.o, s.C, dres, s.C, d.datty, g.o, true);
  k.zero(d.dqkv, s.BT * s.ld);
  k.gqa_attention_backward(d.dqkv, d.datt, d.datty, a.qkv, a.att, B, T, int(s.C), c.n_head,
                           c.n_kv_head);
  k.rope_backward(d.dqkv, cos, sin, B, T, int(s.ld), c.n_head + c.n_kv_head, c.head_dim());
  ProjectBackward(k, a.h1, s.BT, s.C, w.q, s.C, d.dqkv, s.ld, d.dh, g.q, true);
  ProjectBackward(k, a.h1, s.BT, s.C, w.k, s.KV, d.dqkv + s.C, s.ld, d.dh, g.k, false);
  ProjectBackward(k, a.h1, s.BT, s.C, w.v, s.KV, d.dqkv + s.C + s.KV, s.ld, d.dh, g.v, false);
  k.rmsnorm_backward(dres, g.input_norm, d.dh, x, w.input_norm, a.rstd1, int(s.BT), int(s.C));
}

}  // namespace strata::models
