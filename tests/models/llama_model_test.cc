// The whole LLaMA model on the CPU kernel table, its ends included: embedding, decoder layers,
// final RMSNorm, lm_head (or the tied embedding) and the mean cross-entropy, against Hugging
// Face's LlamaForCausalLM in double: the loss, and the gradient of every parameter by finite
// differences, untied and tied.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/kernels/rope.h"
#include "models/llama/llama_block.h"
#include "models/llama/llama_ends.h"
#include "models/llama/llama_layout.h"
#include "tests/core/kernel_test_util.h"
#include "tests/models/llama_reference.h"

namespace strata::models {
namespace {

using kernels::testing::expect_near_all;
using kernels::testing::finite_difference;
using kernels::testing::random_vector;
using kernels::testing::to_double;

// The tensors of block `b` of a flat parameter vector, as the reference's Weights.
Weights LayerWeights(const LlamaLayout& l, const V& p, int layer) {
  const BlockSpec& b = l.layer(layer);
  const size_t base = size_t(l.block_offset[size_t(layer + 1)]);
  Weights w;
  for (size_t t = 0; t < b.tensors.size(); ++t) {
    const TensorSpec& s = b.tensors[t];
    *w.all()[t] = V(p.begin() + long(base + s.offset), p.begin() + long(base + s.offset + s.numel));
  }
  return w;
}

// LlamaForCausalLM's mean cross-entropy in double, from a flat parameter vector.
double ReferenceLoss(const LlamaLayout& l, const V& p, const std::vector<int32_t>& tokens,
                     const std::vector<int32_t>& targets) {
  const LlamaConfig& c = l.config;
  const int C = c.n_embd, Vs = c.vocab_size;
  const double* embed = p.data() + l.block_offset[0];
  V x(tokens.size() * C);
  for (size_t r = 0; r < tokens.size(); ++r)
    for (int e = 0; e < C; ++e) x[r * C + e] = embed[size_t(tokens[r]) * C + e];
  for (int layer = 0; layer < c.n_layer; ++layer) {
    Weights w = LayerWeights(l, p, layer);
    x = Block(c, w, x);
  }
  const size_t head = size_t(l.block_offset.back());
  const V norm(p.begin() + long(head), p.begin() + long(head) + C);
  const double* w_out = c.tie_embeddings ? embed : p.data() + head + l.head().tensors[kLmHead].offset;
  const V h = RmsNorm(x, norm, C, c.norm_eps);
  const V logits = Linear(h, V(w_out, w_out + size_t(Vs) * C), C, Vs);
  double loss = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    double max = -1e300, sum = 0;
    for (int v = 0; v < Vs; ++v) max = std::max(max, logits[r * Vs + v]);
    for (int v = 0; v < Vs; ++v) sum += std::exp(logits[r * Vs + v] - max);
    loss += max + std::log(sum) - logits[r * Vs + size_t(targets[r])];
  }
  return loss / double(targets.size());
}

void CheckModel(bool tied) {
  LlamaConfig c = Tiny();
  c.n_layer = 2;
  c.vocab_size = 11;
  c.tie_embeddings = tied;
  const LlamaLayout l = MakeLlamaLayout(c);
  std::vector<float> p(size_t(l.total_numel), 0.0f), g(p.size(), 0.0f);
  uint64_t seed = 50;
  for (int b = 0; b < l.num_blocks(); ++b)
    for (const TensorSpec& t : l.blocks[size_t(b)].tensors) {
      auto v = random_vector(size_t(t.numel), seed++, -0.4f, 0.4f);
      for (float& f : v) f += t.init == InitKind::kOnes ? 1.0f : 0.0f;
      std::copy(v.begin(), v.end(), p.begin() + l.block_offset[size_t(b)] + t.offset);
    }
  std::vector<int32_t> tokens(size_t(kB) * kT), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = int32_t((i * 7 + 3) % 11);
    targets[i] = int32_t((i * 5 + 1) % 11);
  }

  const KernelTable& k = CpuKernelTable();
  const int C = c.n_embd, N = kB * kT;
  std::vector<float> cos(size_t(kT) * c.head_dim() / 2), sin(cos.size());
  kernels::rope_table(cos.data(), sin.data(), kT, c.head_dim(), c.rope_theta);
  std::vector<std::vector<float>> acts;
  std::vector<LlamaBlockActs> a;
  for (int i = 0; i < c.n_layer; ++i) {
    acts.emplace_back(size_t(LlamaBlockActsFloats(c, kB, kT)));
    a.push_back(CarveLlamaBlockActs(c, kB, kT, acts.back().data()));
  }
  std::vector<float> x0(size_t(N) * C), hacts(size_t(LlamaHeadActsFloats(c, kB, kT)));
  const LlamaHeadActs ha = CarveLlamaHeadActs(c, kB, kT, hacts.data());
  float* embed = p.data() + l.block_offset[0];
  float* head = p.data() + l.block_offset.back();
  const float* w_out = tied ? embed : head + l.head().tensors[kLmHead].offset;
  float* dembed = g.data() + l.block_offset[0];
  float* dhead = g.data() + l.block_offset.back();
  float* dw_out = tied ? dembed : dhead + l.head().tensors[kLmHead].offset;

  LlamaEmbeddingForward(k, c, embed, tokens.data(), kB, kT, x0.data());
  const float* x = x0.data();
  for (int i = 0; i < c.n_layer; ++i) {
    LlamaBlockForward(k, c, l.layer(i), p.data() + l.block_offset[size_t(i + 1)], cos.data(),
                      sin.data(), x, kB, kT, a[size_t(i)]);
    x = a[size_t(i)].out;
  }
  const float loss = LlamaHeadForward(k, c, head, w_out, x, targets.data(), kB, kT, ha);
  std::vector<float> dres(size_t(N) * C), head_scratch(size_t(LlamaHeadScratchFloats(c, kB, kT))),
      scratch(size_t(LlamaBlockScratchFloats(c, kB, kT)));
  LlamaHeadBackward(k, c, head, w_out, dhead, dw_out, x, targets.data(), kB, kT,
                    1.0f / float(kB * kT), ha, head_scratch.data(), dres.data());
  const LlamaBlockScratch d = CarveLlamaBlockScratch(c, kB, kT, scratch.data());
  for (int i = c.n_layer - 1; i >= 0; --i) {
    const size_t off = size_t(l.block_offset[size_t(i + 1)]);
    LlamaBlockBackward(k, c, l.layer(i), p.data() + off, g.data() + off, cos.data(), sin.data(),
                       i == 0 ? x0.data() : a[size_t(i - 1)].out, kB, kT, a[size_t(i)], d,
                       dres.data());
  }
  LlamaEmbeddingBackward(k, c, dembed, dres.data(), tokens.data(), kB, kT);

  const V pd = to_double(p);
  EXPECT_NEAR(loss, ReferenceLoss(l, pd, tokens, targets), 1e-5);
  expect_near_all(g,
                  finite_difference([&](const V& v) { return ReferenceLoss(l, v, tokens, targets); },
                                    pd),
                  2e-3, 1e-5, tied ? "tied gradients" : "gradients");
}

TEST(LlamaModel, LossAndEveryGradientMatchTheDoubleReference) { CheckModel(false); }
TEST(LlamaModel, TiedEmbeddingsGetBothContributions) { CheckModel(true); }

}  // namespace
}  // namespace strata::models
