// The activation layout (scheduler/activations.h): one size table, one carving, every piece
// inside the buffer and in the order of Note [Activation layout], for every recompute count.
#include "scheduler/activations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_layout.h"
#include "models/gpt2/gpt_model.h"
#include "scheduler/memory_plan.h"

namespace strata::scheduler {
namespace {

GptConfig Tiny(int n_layer) {
  GptConfig c = *GptPreset("tiny");
  c.n_layer = n_layer;
  return c;
}

// (offset, floats) of every top-level piece, in carving order, read back from the pointers.
std::vector<std::pair<int64_t, int64_t>> Pieces(const ActivationLayout& a, const Activations& x,
                                                const float* base) {
  std::vector<std::pair<int64_t, int64_t>> pieces;
  auto add = [&](const float* p, int64_t floats) { pieces.emplace_back(p - base, floats); };
  add(x.emb_out, a.residual);
  for (int l = 0; l < a.n_layer; ++l) {
    if (a.recomputed(l)) {
      add(x.outputs[l], a.residual);
    } else {
      add(x.layers[l], a.block);
    }
  }
  if (a.recompute_layers > 0) add(x.work, a.block);
  add(x.head, a.head);
  add(x.scratch, a.scratch);
  for (const float* d : x.dres) add(d, a.residual);
  return pieces;
}

TEST(ActivationLayoutTest, SizeTableMatchesTheBlockPartsAndSums) {
  const GptConfig c = Tiny(4);
  const GptModel m(c);
  const int B = 3, T = 17;  // BT * C is not a multiple of 16 floats: residual pieces round up
  for (int r = 0; r <= c.n_layer; ++r) {
    const ActivationLayout a = MakeActivationLayout(m, B, T, r);
    EXPECT_EQ(a.block, TransformerActsFloats(c, B, T));
    EXPECT_EQ(a.head, HeadActsFloats(c, B, T));
    EXPECT_EQ(a.scratch, BackwardScratchFloats(c, B, T));
    EXPECT_GE(a.residual, int64_t(B) * T * c.n_embd);
    EXPECT_LT(a.residual, int64_t(B) * T * c.n_embd + kTensorAlignFloats);
    for (int64_t n : {a.residual, a.block, a.head, a.scratch}) {
      EXPECT_EQ(n % kTensorAlignFloats, 0) << n;
    }
    const int64_t kept = (c.n_layer - r) * a.block + r * a.residual + (r > 0 ? a.block : 0);
    EXPECT_EQ(a.floats(), a.residual + kept + a.head + a.scratch + a.residual) << "r " << r;
    EXPECT_EQ(a.bytes(), uint64_t(a.floats()) * 4);
  }
}

TEST(ActivationLayoutTest, CarvingStaysInsideTheBufferInOrder) {
  const GptConfig c = Tiny(4);
  const GptModel m(c);
  for (int r = 0; r <= c.n_layer; ++r) {
    const ActivationLayout a = MakeActivationLayout(m, 2, 16, r);
    std::vector<float> buffer(a.floats());
    const Activations x = CarveActivations(a, buffer.data(), StepLayerOutputOf(m, 2, 16));
    const auto pieces = Pieces(a, x, buffer.data());
    int64_t expected = 0;  // back to back, no gap, no overlap
    for (const auto& [offset, floats] : pieces) {
      EXPECT_EQ(offset, expected) << "r " << r;
      EXPECT_EQ(offset % kTensorAlignFloats, 0);
      expected = offset + floats;
    }
    EXPECT_EQ(expected, a.floats()) << "r " << r;
    // Inner parts of a piece stay inside it.
    const auto& head = pieces[pieces.size() - 3];
    EXPECT_EQ(x.head - buffer.data(), head.first);
    EXPECT_LE(
        CarveHeadActs(c, 2, 16, x.head).probs + int64_t(2) * 16 * c.vocab_size - buffer.data(),
        head.first + head.second);
  }
}

TEST(ActivationLayoutTest, RecomputedLayersKeepOnlyTheirOutput) {
  const GptConfig c = Tiny(4);
  const GptModel m(c);
  const LayerOutputOf output_of = StepLayerOutputOf(m, 2, 16);
  const ActivationLayout none = MakeActivationLayout(m, 2, 16, 0);
  std::vector<float> buffer(none.floats());
  const Activations all_kept = CarveActivations(none, buffer.data(), output_of);
  EXPECT_EQ(all_kept.work, nullptr) << "no rebuild buffer without recompute";
  for (int l = 0; l < c.n_layer; ++l) {
    ASSERT_NE(all_kept.layers[l], nullptr);
    EXPECT_EQ(all_kept.outputs[l], CarveTransformerActs(c, 2, 16, all_kept.layers[l]).out);
  }

  const int r = 2;
  const ActivationLayout some = MakeActivationLayout(m, 2, 16, r);
  std::vector<float> small(some.floats());
  const Activations x = CarveActivations(some, small.data(), output_of);
  ASSERT_NE(x.work, nullptr);
  for (int l = 0; l < c.n_layer; ++l) {
    if (l < r) {
      EXPECT_EQ(x.layers[l], nullptr) << l;
      EXPECT_NE(x.outputs[l], nullptr) << l;
    } else {
      EXPECT_EQ(x.outputs[l], CarveTransformerActs(c, 2, 16, x.layers[l]).out) << l;
    }
  }
  // Each checkpointed block trades its activations for its output; one rebuild buffer is added.
  EXPECT_EQ(none.floats() - some.floats(), r * (none.block - none.residual) - none.block);
  // Checkpointing one block saves nothing (its rebuild needs a block's activations too).
  EXPECT_GT(MakeActivationLayout(m, 2, 16, 1).floats(), none.floats());
  EXPECT_LT(MakeActivationLayout(m, 2, 16, c.n_layer).floats(), some.floats());
}

// The memory plan budgets exactly the layout the engine carves.
// Note [Tied gradient order]: one dres per micro-batch, carved after the scratch.
TEST(ActivationLayoutTest, EveryMicroBatchKeepsItsResidualGradient) {
  const GptModel m(Tiny(4));
  const ActivationLayout one = MakeActivationLayout(m, 2, 16, 1);
  const ActivationLayout three = MakeActivationLayout(m, 2, 16, 1, 3);
  EXPECT_EQ(three.floats(), one.floats() + 2 * one.residual);
  std::vector<float> buffer(three.floats());
  const Activations x = CarveActivations(three, buffer.data(), StepLayerOutputOf(m, 2, 16));
  ASSERT_EQ(x.dres.size(), 3u);
  EXPECT_EQ(x.dres[1] - x.dres[0], one.residual);
  EXPECT_EQ(x.dres[2] + one.residual, buffer.data() + buffer.size());
}

TEST(ActivationLayoutTest, MemoryPlanBudgetsTheLayout) {
  const GptModel m(Tiny(4));
  MemoryPlanInput in;
  in.model = &m;
  in.layout = &m.layout();
  in.micro_rows = 2;
  in.batch = 4;
  in.seq = 16;
  in.page_bytes = 16384;
  in.param_pages = in.grad_pages = 16;
  in.moment_pages = 32;
  for (const char* recompute : {"none", "all"}) {
    in.recompute = recompute;
    auto plan = MakeMemoryPlan(in);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const uint64_t bytes = MakeActivationLayout(m, 2, 16, plan->recompute_layers, 2).bytes();
    EXPECT_EQ(plan->acts_bytes, (bytes + 4095) / 4096 * 4096) << recompute;
  }
}

}  // namespace
}  // namespace strata::scheduler
