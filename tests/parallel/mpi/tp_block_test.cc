// A tensor-parallel GPT-2 block over the job's ranks (models/gpt2/gpt_blocks.h with its tp group,
// Note [Rules imply the all-reduces] in core/nn/parallel_linear.h), its all-reduces on the real
// Comm: each rank's forward output,
// input gradient and slice of the parameter gradients match the whole block's, computed on every
// rank alone, up to float rounding; and two runs give the same bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/device/kernel_table.h"
#include "core/nn/tp_layout.h"
#include "models/gpt2/gpt_blocks.h"
#include "mpi_test_util.h"
#include "tp_test_util.h"

namespace strata::parallel::testing_mpi {
namespace {

constexpr int kB = 2, kT = 16;

GptConfig Config() {
  GptConfig c;
  c.n_layer = 1;
  c.n_head = 4;
  c.n_embd = 64;
  c.vocab_size = 128;
  c.block_size = kT;
  return c;
}

struct BlockRun {
  std::vector<float> out, grads, dx;
};

// The block's forward and backward: whole (tp_layout == nullptr) or this rank's slice.
BlockRun RunBlock(const GptLayout& layout, const GptLayout* tp_layout, const std::vector<float>& params,
             const std::vector<float>& x, const std::vector<float>& dout) {
  const GptConfig& c = layout.config;
  const KernelTable& k = CpuKernelTable();
  const int tp = tp_layout != nullptr ? World().size() : 1;  // exactly a slice's buffers
  std::vector<float> acts_buf(size_t(TransformerActsFloats(c, kB, kT, tp)));
  std::vector<float> scratch_buf(size_t(BackwardScratchFloats(c, kB, kT, tp)));
  const TransformerActs acts = CarveTransformerActs(c, kB, kT, acts_buf.data(), tp);
  const BackwardScratch scratch = CarveBackwardScratch(c, kB, kT, scratch_buf.data(), tp);
  BlockRun r;
  r.dx = dout;
  Comm& world = World();
  const TpGroup group{
      .rank = world.rank(), .size = world.size(), .all_reduce = [&world](float* data, int64_t n) {
        ASSERT_TRUE(world.all_reduce_sum(data, data, size_t(n)).wait().ok());
      }};
  if (tp_layout == nullptr) {
    r.grads.assign(size_t(layout.transformer(0).numel), 0.0f);
    TransformerForward(k, layout, 0, params.data(), x.data(), kB, kT, acts);
    r.out.assign(acts.out, acts.out + x.size());
    TransformerBackward(k, layout, 0, params.data(), r.grads.data(), x.data(), kB, kT, acts,
                        scratch, r.dx.data(), /*first=*/true);
  } else {
    r.grads.assign(size_t(tp_layout->transformer(0).numel), 0.0f);
    TransformerForward(k, *tp_layout, 0, params.data(), x.data(), kB, kT, acts, &group);
    r.out.assign(acts.out, acts.out + x.size());
    TransformerBackward(k, *tp_layout, 0, params.data(), r.grads.data(), x.data(), kB, kT, acts,
                        scratch, r.dx.data(), /*first=*/true, &group);
  }
  return r;
}

TEST(TpBlock, EachRanksSliceComputesTheWholeBlockUpToRounding) {
  Comm& world = World();
  const GptConfig c = Config();
  if (c.n_head % world.size() != 0) GTEST_SKIP() << "the ranks must divide the 4 heads";
  const GptLayout full = MakeGptLayout(c);
  const GptLayout tp = MakeTpLayout(c, world.size());
  const BlockSpec& fb = full.transformer(0);
  const BlockSpec& lb = tp.transformer(0);
  std::vector<float> params(size_t(fb.numel));
  InitBlockParams(fb, 3, params.data());
  for (const TensorSpec& t : fb.tensors) {  // non-zero biases: a bias added twice shows
    if (t.shape.size() == 1) {
      for (int64_t i = 0; i < t.numel; ++i) params[size_t(t.offset + i)] += 0.01f * float(i % 5);
    }
  }
  const size_t n = size_t(kB) * kT * c.n_embd;
  const std::vector<float> x = Random(n, 1), dout = Random(n, 2);  // the same on every rank
  const BlockRun whole = RunBlock(full, nullptr, params, x, dout);
  std::vector<float> mine(size_t(lb.numel));
  SliceBlockParams(fb, lb, world.rank(), params.data(), mine.data());
  const BlockRun sliced = RunBlock(full, &tp, mine, x, dout);
  EXPECT_LT(RelativeError(sliced.out.data(), whole.out.data(), int64_t(n)), 1e-5);
  EXPECT_LT(RelativeError(sliced.dx.data(), whole.dx.data(), int64_t(n)), 1e-5);
  std::vector<float> want(size_t(lb.numel));
  SliceBlockParams(fb, lb, world.rank(), whole.grads.data(), want.data());
  for (const TensorSpec& t : lb.tensors) {
    EXPECT_LT(RelativeError(sliced.grads.data() + t.offset, want.data() + t.offset, t.numel), 1e-5)
        << t.name << " on rank " << world.rank();
  }
  // The replicated tensors (layernorms, row-parallel biases) get the same gradient bits on every
  // rank, so their replicas never drift apart (Note [Rules imply the all-reduces]).
  for (size_t t = 0; t < lb.tensors.size(); ++t) {
    if (!TpReplicated(lb, int(t))) continue;
    const TensorSpec& ts = lb.tensors[t];
    std::vector<float> all(size_t(ts.numel) * world.size());
    ASSERT_TRUE(world.all_gather(sliced.grads.data() + ts.offset, all.data(), size_t(ts.numel) * 4)
                    .wait()
                    .ok());
    for (int r = 1; r < world.size(); ++r) {
      EXPECT_TRUE(std::equal(all.begin(), all.begin() + ts.numel, all.begin() + r * ts.numel))
          << ts.name << ": rank " << r << "'s gradient differs from rank 0's";
    }
  }
  const BlockRun again = RunBlock(full, &tp, mine, x, dout);
  EXPECT_EQ(again.out, sliced.out) << "a second run gives the same bits";
  EXPECT_EQ(again.grads, sliced.grads);
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
