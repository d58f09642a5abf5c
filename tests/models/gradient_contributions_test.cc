// Note [Gradient contributions] in core/nn/gradient_contribution.h: a gradient over several micro-
// batches is the left fold of contributions each made from zero. So the gradients one process makes
// over micro-batches 0 and 1 have the bits of micro-batch 0's gradients plus micro-batch 1's, each
// made alone: what a data-parallel run of two ranks sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "core/device/kernel_table.h"
#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_layout.h"

namespace strata {
namespace {

constexpr int kB = 4, kT = 128;  // enough rows for the kernels to sum in several partial sums

GptConfig SmallConfig() {
  GptConfig c;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 32;
  c.vocab_size = 300;  // above one wte slice (GradSliceRows): the slices are exercised
  c.block_size = kT;
  return c;
}

std::vector<float> Floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> Sum(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> s(a.size());
  for (size_t i = 0; i < a.size(); ++i) s[i] = a[i] + b[i];
  return s;
}

void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what;
}

// One micro-batch's input, output gradient and tokens, and the buffers the blocks need.
struct Fixture {
  GptConfig c = SmallConfig();
  GptLayout layout = MakeGptLayout(c);
  std::vector<float> acts_buf, scratch_buf;
  TransformerActs acts{};
  BackwardScratch scratch{};
  Fixture() {
    acts_buf.assign(TransformerActsFloats(c, kB, kT), 0.0f);
    scratch_buf.assign(BackwardScratchFloats(c, kB, kT), 0.0f);
    acts = CarveTransformerActs(c, kB, kT, acts_buf.data());
    scratch = CarveBackwardScratch(c, kB, kT, scratch_buf.data());
  }
  std::vector<float> params(int block) {
    std::vector<float> p(layout.blocks[block].numel);
    InitBlockParams(layout.blocks[block], 7, p.data());
    return p;
  }
  // The transformer block's backward of micro-batch `mb` into `grads`.
  void block_backward(const std::vector<float>& p, std::vector<float>& grads, int mb, bool first) {
    const KernelTable& k = CpuKernelTable();
    std::vector<float> x = Floats(int64_t(kB) * kT * c.n_embd, 100 + mb);
    std::vector<float> dres = Floats(int64_t(kB) * kT * c.n_embd, 200 + mb);
    TransformerForward(k, layout, 0, p.data(), x.data(), kB, kT, acts);
    TransformerBackward(k, layout, 0, p.data(), grads.data(), x.data(), kB, kT, acts, scratch,
                        dres.data(), first);
  }
  // The embedding's backward of micro-batch `mb` into `grads`.
  void embedding_backward(std::vector<float>& grads, int mb, bool first_wpe, bool first_wte) {
    std::vector<float> dres = Floats(int64_t(kB) * kT * c.n_embd, 300 + mb);
    std::vector<int32_t> tokens(kB * kT);
    for (int i = 0; i < kB * kT; ++i) tokens[i] = (i * 37 + mb * 11) % c.vocab_size;
    EmbeddingBackward(CpuKernelTable(), layout, grads.data(), dres.data(), tokens.data(), kB, kT,
                      scratch, first_wpe, first_wte);
  }
};

TEST(GradientContributions, TwoMicroBatchesGiveTheSumOfEachAlone) {
  Fixture f;
  const std::vector<float> p = f.params(1);
  const size_t n = p.size();
  // Value-initialised (zeros): the (n, 0.0f) form trips GCC 12's -Wfree-nonheap-object false
  // positive at -O3 -march=sapphirerapids (an error under STRATA_WERROR).
  std::vector<float> both(n), only0(n), only1(n);
  f.block_backward(p, both, 0, /*first=*/true);
  f.block_backward(p, both, 1, /*first=*/false);
  f.block_backward(p, only0, 0, /*first=*/true);
  f.block_backward(p, only1, 1, /*first=*/true);
  ExpectSameBits(both, Sum(only0, only1), "block gradient");
}

// The embedding: wpe's first contribution is micro-batch 0's; wte's is never the embedding's (the
// head's comes first), so wte's sum starts from a head-like gradient already in place.
TEST(GradientContributions, EmbeddingFoldsInOrderSliceBySlice) {
  Fixture f;
  ASSERT_LT(GradSliceRows(f.c, kT), f.c.vocab_size);
  const auto& wte = f.layout.embedding().tensors[kWte];
  const auto& wpe = f.layout.embedding().tensors[kWpe];
  const size_t n = f.layout.blocks[0].numel;
  std::vector<float> start(n, 0.0f);  // wte: the head's sum (random here); wpe: zero
  const std::vector<float> head = Floats(wte.numel, 400);
  std::copy(head.begin(), head.end(), start.begin() + wte.offset);
  std::vector<float> both = start;
  f.embedding_backward(both, 0, /*first_wpe=*/true, /*first_wte=*/false);
  f.embedding_backward(both, 1, /*first_wpe=*/false, /*first_wte=*/false);
  // Each micro-batch alone, from zero, as a rank makes it; then the fold in order.
  std::vector<float> e0(n, 0.0f), e1(n, 0.0f);
  f.embedding_backward(e0, 0, /*first_wpe=*/true, /*first_wte=*/true);
  f.embedding_backward(e1, 1, /*first_wpe=*/true, /*first_wte=*/true);
  auto part = [](const std::vector<float>& v, const TensorSpec& t) {
    return std::vector<float>(v.begin() + t.offset, v.begin() + t.offset + t.numel);
  };
  ExpectSameBits(part(both, wte), Sum(Sum(head, part(e0, wte)), part(e1, wte)), "wte gradient");
  ExpectSameBits(part(both, wpe), Sum(part(e0, wpe), part(e1, wpe)), "wpe gradient");
}

}  // namespace
}  // namespace strata
