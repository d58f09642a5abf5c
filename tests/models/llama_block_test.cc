// One LLaMA decoder layer through the CPU kernel table against Hugging Face's LlamaDecoderLayer
// computed in double: the forward, and every gradient (the input's and each weight's) against
// finite differences of the double reference.
#include "models/llama/llama_block.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/rope.h"
#include "models/llama/llama_layout.h"
#include "tests/core/kernel_test_util.h"
#include "tests/models/llama_reference.h"

namespace strata::models {
namespace {

using kernels::testing::expect_near_all;
using kernels::testing::random_vector;
using kernels::testing::to_double;

TEST(LlamaBlock, ForwardAndEveryGradientMatchTheDoubleReference) {
  const LlamaConfig c = Tiny();
  const int C = c.n_embd, KV = c.n_kv_head * c.head_dim(), F = c.ffn_dim;
  const size_t sizes[] = {size_t(C), size_t(C) * C, size_t(KV) * C, size_t(KV) * C, size_t(C) * C,
                          size_t(C), size_t(F) * C, size_t(F) * C, size_t(C) * F};
  std::vector<std::vector<float>> wf;
  for (size_t i = 0; i < 9; ++i) wf.push_back(random_vector(sizes[i], 100 + i, -0.4f, 0.4f));
  for (float& f : wf[0]) f += 1.0f;  // norms near one, as initialised
  for (float& f : wf[5]) f += 1.0f;
  const auto x = random_vector(size_t(kB) * kT * C, 7, -1.5f, 1.5f);
  const auto dout = random_vector(x.size(), 8);

  const KernelTable& k = CpuKernelTable();
  std::vector<float> cos(size_t(kT) * c.head_dim() / 2), sin(cos.size());
  kernels::rope_table(cos.data(), sin.data(), kT, c.head_dim(), c.rope_theta);
  std::vector<float> acts(size_t(LlamaBlockActsFloats(c, kB, kT))),
      scratch(size_t(LlamaBlockScratchFloats(c, kB, kT)));
  const LlamaBlockActs a = CarveLlamaBlockActs(c, kB, kT, acts.data());
  const LlamaBlockScratch d = CarveLlamaBlockScratch(c, kB, kT, scratch.data());
  // The layer's block: its tensors contiguous in the layout's order.
  const LlamaLayout layout = MakeLlamaLayout(c);
  const BlockSpec& spec = layout.layer(0);
  std::vector<float> params(size_t(spec.numel)), grads(params.size(), 0.0f);
  for (size_t i = 0; i < 9; ++i) {
    ASSERT_EQ(size_t(spec.tensors[i].numel), sizes[i]);
    std::copy(wf[i].begin(), wf[i].end(), params.begin() + spec.tensors[i].offset);
  }
  LlamaBlockForward(k, c, spec, params.data(), cos.data(), sin.data(), x.data(), kB, kT, a);
  std::vector<float> dres = dout;
  LlamaBlockBackward(k, c, spec, params.data(), grads.data(), cos.data(), sin.data(), x.data(), kB,
                     kT, a, d, dres.data());
  std::vector<std::vector<float>> gf;
  for (size_t i = 0; i < 9; ++i) {
    const auto at = grads.begin() + spec.tensors[i].offset;
    gf.emplace_back(at, at + spec.tensors[i].numel);
  }

  Weights w;
  for (size_t i = 0; i < 9; ++i) *w.all()[i] = to_double(wf[i]);
  V xd = to_double(x);
  const V out = Block(c, w, xd);
  expect_near_all(std::vector<float>(a.out, a.out + x.size()), out, 1e-5, 1e-6, "out");
  expect_near_all(dres, FiniteDifference(c, w, xd, xd, dout), 1e-3, 1e-5, "dx");
  const char* names[] = {"input_norm", "q", "k", "v", "o", "post_norm", "gate", "up", "down"};
  for (size_t i = 0; i < 9; ++i) {
    expect_near_all(gf[i], FiniteDifference(c, w, xd, *w.all()[i], dout), 1e-3, 1e-5, names[i]);
  }
}

}  // namespace
}  // namespace strata::models
