// Hugging Face's LlamaForCausalLM computed in double on host vectors: the reference the LLaMA
// model's ops are checked against (tests/models/llama_*_test.cc), with finite differences.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "models/llama/llama_config.h"

namespace strata::models {

using V = std::vector<double>;

constexpr int kB = 2, kT = 5;

inline LlamaConfig Tiny() {
  LlamaConfig c;
  c.n_layer = 1;
  c.n_embd = 16;
  c.n_head = 4;
  c.n_kv_head = 2;
  c.ffn_dim = 24;
  c.vocab_size = 32;
  c.block_size = 8;
  c.rope_theta = 10000.0;
  c.norm_eps = 1e-5f;
  return c;
}

// The block's tensors in Hugging Face's order, as one vector each.
struct Weights {
  V in, q, k, v, o, post, gate, up, down;
  std::vector<V*> all() { return {&in, &q, &k, &v, &o, &post, &gate, &up, &down}; }
};

inline V RmsNorm(const V& x, const V& w, int C, double eps) {
  V y(x.size());
  for (size_t r = 0; r < x.size() / C; ++r) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[r * C + c] * x[r * C + c];
    const double s = 1.0 / std::sqrt(ss / C + eps);
    for (int c = 0; c < C; ++c) y[r * C + c] = w[c] * (x[r * C + c] * s);
  }
  return y;
}

inline V Linear(const V& x, const V& w, int in, int out) {  // x (rows, in) @ w^T, w (out, in)
  const size_t rows = x.size() / in;
  V y(rows * out, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) y[r * out + o] += x[r * in + i] * w[size_t(o) * in + i];
  return y;
}

inline void Rope(V& x, int heads, int hd, double theta) {  // (B*T, heads*hd), position = row % T
  const int half = hd / 2;
  for (size_t r = 0; r < x.size() / (heads * hd); ++r)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < half; ++i) {
        const double a = double(r % kT) / std::pow(theta, 2.0 * i / hd);
        double* p = &x[r * heads * hd + size_t(h) * hd];
        const double x1 = p[i], x2 = p[i + half];
        p[i] = x1 * std::cos(a) - x2 * std::sin(a);
        p[i + half] = x2 * std::cos(a) + x1 * std::sin(a);
      }
}

inline V Block(const LlamaConfig& c, Weights& w, const V& x) {
  const int C = c.n_embd, hd = c.head_dim(), KV = c.n_kv_head * hd, F = c.ffn_dim;
  const V h1 = RmsNorm(x, w.in, C, c.norm_eps);
  V q = Linear(h1, w.q, C, C), k = Linear(h1, w.k, C, KV);
  const V v = Linear(h1, w.v, C, KV);
  Rope(q, c.n_head, hd, c.rope_theta);
  Rope(k, c.n_kv_head, hd, c.rope_theta);
  V atty(size_t(kB) * kT * C, 0.0);
  const int group = c.n_head / c.n_kv_head;
  for (int b = 0; b < kB; ++b)
    for (int h = 0; h < c.n_head; ++h)
      for (int i = 0; i < kT; ++i) {
        V p(kT);
        double max = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int e = 0; e < hd; ++e)
            dot += q[(b * kT + i) * C + h * hd + e] * k[(b * kT + j) * KV + (h / group) * hd + e];
          max = std::max(max, p[j] = dot / std::sqrt(double(hd)));
        }
        for (int j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - max));
        for (int j = 0; j <= i; ++j)
          for (int e = 0; e < hd; ++e)
            atty[(b * kT + i) * C + h * hd + e] +=
                p[j] / sum * v[(b * kT + j) * KV + (h / group) * hd + e];
      }
  V res = Linear(atty, w.o, C, C);
  for (size_t i = 0; i < res.size(); ++i) res[i] += x[i];
  const V h2 = RmsNorm(res, w.post, C, c.norm_eps);
  const V g = Linear(h2, w.gate, C, F), u = Linear(h2, w.up, C, F);
  V m(g.size());
  for (size_t i = 0; i < m.size(); ++i) m[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  V out = Linear(m, w.down, F, C);
  for (size_t i = 0; i < out.size(); ++i) out[i] += res[i];
  return out;
}

inline double Loss(const V& out, const std::vector<float>& dout) {
  double s = 0;
  for (size_t i = 0; i < out.size(); ++i) s += out[i] * dout[i];
  return s;
}

// d Loss / d t for every element of t, central differences of the double reference.
inline V FiniteDifference(const LlamaConfig& c, Weights& w, V& x, V& t, const std::vector<float>& dout) {
  V g(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    const double h = 1e-5 * std::max(1.0, std::abs(t[i])), keep = t[i];
    t[i] = keep + h;
    const double up = Loss(Block(c, w, x), dout);
    t[i] = keep - h;
    const double down = Loss(Block(c, w, x), dout);
    t[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

}  // namespace strata::models
