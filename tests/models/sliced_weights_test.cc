// A transformer block whose MLP weights come slice by slice (TransformerWeights, the split
// operators of scheduler/split_plan.h) computes the bits of the whole block: forward output and
// activations, parameter gradients (first and later contributions) and the input gradient.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "core/device/kernel_table.h"
#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_layout.h"

namespace strata {
namespace {

constexpr int kB = 2, kT = 64;

std::vector<float> Floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One forward and backward of the block (two contributions to its gradient: micro-batches 0 and
// 1), with the weights whole or in `slices` slices handed out from copies elsewhere.
struct BlockRun {
  std::vector<float> out, grads, dres;
};

BlockRun RunBlock(const GptLayout& layout, const std::vector<float>& params, int slices) {
  const GptConfig& c = layout.config;
  const KernelTable& k = CpuKernelTable();
  std::vector<float> acts_buf(size_t(TransformerActsFloats(c, kB, kT)));
  std::vector<float> scratch_buf(size_t(BackwardScratchFloats(c, kB, kT)));
  const TransformerActs acts = CarveTransformerActs(c, kB, kT, acts_buf.data());
  const BackwardScratch scratch = CarveBackwardScratch(c, kB, kT, scratch_buf.data());
  TransformerWeights w = WholeTransformerWeights(layout, 0, params.data());
  // Each slice is handed out from a buffer of its own, as a gathered slice would be.
  std::vector<std::vector<float>> copies;
  std::vector<std::pair<int, int>> asked;
  if (slices > 1) {
    const BlockSpec& spec = layout.transformer(0);
    w.slices = slices;
    for (int t : {kFcW, kFcProjW}) w.tensor[t] = nullptr;
    w.slice = [&, spec](int t, int s) {
      asked.emplace_back(t, s);
      const TensorSpec& ts = spec.tensors[t];
      const auto [r0, r1] = LinearSliceRows(int(ts.shape[0]), slices, s);
      const float* from = params.data() + ts.offset + int64_t(r0) * ts.shape[1];
      copies.emplace_back(from, from + int64_t(r1 - r0) * ts.shape[1]);
      return static_cast<const float*>(copies.back().data());
    };
  }
  BlockRun run;
  run.grads.assign(size_t(layout.transformer(0).numel), 0.0f);
  for (int mb = 0; mb < 2; ++mb) {
    std::vector<float> x = Floats(int64_t(kB) * kT * c.n_embd, 10 + mb);
    run.dres = Floats(int64_t(kB) * kT * c.n_embd, 20 + mb);
    TransformerForward(k, layout, 0, w, x.data(), kB, kT, acts);
    run.out.assign(acts.out, acts.out + int64_t(kB) * kT * c.n_embd);
    TransformerBackward(k, layout, 0, w, run.grads.data(), x.data(), kB, kT, acts, scratch,
                        run.dres.data(), /*first=*/mb == 0);
  }
  if (slices > 1) {  // forward c_fc then c_proj, backward the reverse, each slice once
    std::vector<std::pair<int, int>> expected;
    for (int mb = 0; mb < 2; ++mb) {
      for (int t : {kFcW, kFcProjW, kFcProjW, kFcW}) {
        for (int s = 0; s < slices; ++s) expected.emplace_back(t, s);
      }
    }
    EXPECT_EQ(asked, expected);
  }
  return run;
}

TEST(SlicedWeights, ASplitBlockComputesTheWholeBlocksBits) {
  GptConfig c;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 96;  // 4C = 384 rows in c_proj: chunks of 96 rows
  c.vocab_size = 64;
  c.block_size = kT;
  const GptLayout layout = MakeGptLayout(c);
  std::vector<float> params(size_t(layout.transformer(0).numel));
  InitBlockParams(layout.transformer(0), 7, params.data());
  const BlockRun whole = RunBlock(layout, params, 1);
  for (int slices : {2, 4}) {
    const BlockRun split = RunBlock(layout, params, slices);
    EXPECT_TRUE(SameBits(whole.out, split.out)) << slices << " slices: forward output";
    EXPECT_TRUE(SameBits(whole.grads, split.grads)) << slices << " slices: parameter gradients";
    EXPECT_TRUE(SameBits(whole.dres, split.dres)) << slices << " slices: input gradient";
  }
}

}  // namespace
}  // namespace strata
