// A pipeline stage's step (Note [Stage programs] in scheduler/step_program.h), the blocks a stage
// holds (ShardPlan's held blocks) and its activation sets (Note [Stage activations]).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_layout.h"
#include "models/gpt2/gpt_model.h"
#include "scheduler/activations.h"
#include "scheduler/pipeline_plan.h"
#include "scheduler/shard_plan.h"
#include "scheduler/step_program.h"

namespace strata::scheduler {
namespace {

constexpr int kLayers = 6, kMicroBatches = 4;

StepProgram Stage(int stage, int stages, int first_block, int last_block, PipeSchedule schedule) {
  return BuildStageProgram(kLayers, kMicroBatches, /*wait_for_norm=*/true,
                           {.first_block = first_block,
                            .last_block = last_block,
                            .first = stage == 0,
                            .last = stage == stages - 1},
                           StageSchedule(schedule, stages, stage, kMicroBatches));
}

// Every gradient the program touches is started before use and done at the end; the blocks it
// touches are `held`, each final once, and all updated after the last op (the norm first).
void ExpectStageProgram(const StepProgram& p, const std::set<int>& held, const std::string& tag) {
  std::map<int, int> state, finals;  // 1 started, 2 done
  std::set<int> touched;
  for (const Op& op : p.ops) {
    for (int b : op.grads_started) state[b] = 1;
    for (const SlotUse& u : op.uses) {
      touched.insert(u.block);
      if (u.role == SlotRole::kGrad) {
        EXPECT_EQ(state[u.block], 1) << tag << " " << op.label();
      }
    }
    for (int b : op.grads_done) state[b] = 2;
    for (int b : op.grads_final) ++finals[b];
  }
  EXPECT_EQ(touched, held) << tag;
  for (int b : held) {
    EXPECT_EQ(state[b], 2) << tag << " block " << b;
    EXPECT_EQ(finals[b], 1) << tag << " block " << b;
  }
  EXPECT_EQ(std::set<int>(p.ops.back().updates.begin(), p.ops.back().updates.end()), held) << tag;
}

// The (forward?, micro-batch) order of a block's ops: the stage's schedule.
std::vector<PipeStep> StepsOf(const StepProgram& p, int block) {
  std::vector<PipeStep> steps;
  for (const Op& op : p.ops) {
    if (op.block == block && (op.kind == OpKind::kBlockFwd || op.kind == OpKind::kBlockBwd)) {
      steps.push_back({op.kind == OpKind::kBlockFwd, op.micro_batch});
    }
  }
  return steps;
}

TEST(StageProgram, EachStageRunsItsOwnBlocksInItsSchedulesOrder) {
  for (PipeSchedule schedule : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
    const std::string tag = schedule == PipeSchedule::kGPipe ? "gpipe" : "1f1b";
    const StepProgram first = Stage(0, 3, 1, 2, schedule);
    const StepProgram middle = Stage(1, 3, 3, 4, schedule);
    const StepProgram last = Stage(2, 3, 5, 6, schedule);
    ExpectStageProgram(first, {0, 1, 2}, tag + " first");
    ExpectStageProgram(middle, {3, 4}, tag + " middle");
    ExpectStageProgram(last, {0, 5, 6, 7}, tag + " last");
    for (int s = 0; s < 3; ++s) {
      const StepProgram& p = s == 0 ? first : s == 1 ? middle : last;
      EXPECT_EQ(StepsOf(p, 2 * s + 1), StageSchedule(schedule, 3, s, kMicroBatches)) << tag << s;
    }
  }
}

// Note [Tied gradient order] across the stages: the last stage's head backwards start wte's
// gradient in micro-batch 0 and run right after each head forward; its closing embed_bwd computes
// nothing and finishes the replica's gradient. The first stage's embedding backwards come last, the
// first of them starting the gradient (it receives the heads' fold).
TEST(StageProgram, TheTiedEmbeddingsGradientEndsTheFirstAndTheLastStage) {
  const StepProgram first = Stage(0, 2, 1, 3, PipeSchedule::k1F1B);
  const StepProgram last = Stage(1, 2, 4, 6, PipeSchedule::k1F1B);
  for (size_t i = 0; i < last.ops.size(); ++i) {
    if (last.ops[i].kind != OpKind::kHeadFwd) continue;
    ASSERT_LT(i + 1, last.ops.size());
    EXPECT_EQ(last.ops[i + 1].kind, OpKind::kHeadBwd);
    EXPECT_EQ(last.ops[i + 1].micro_batch, last.ops[i].micro_batch);
  }
  const Op& closing = last.ops.back();
  EXPECT_EQ(closing.kind, OpKind::kEmbedBwd);
  EXPECT_EQ(closing.grads_final, std::vector<int>{0});
  ASSERT_EQ(closing.uses.size(), 1u);
  EXPECT_EQ(closing.uses[0].role, SlotRole::kGrad);
  const size_t tail = first.ops.size() - kMicroBatches;
  for (int m = 0; m < kMicroBatches; ++m) {
    EXPECT_EQ(first.ops[tail + m].kind, OpKind::kEmbedBwd);
    EXPECT_EQ(first.ops[tail + m].micro_batch, m);
  }
  EXPECT_EQ(first.ops[tail].grads_started, std::vector<int>{0});
}

TEST(StageShards, BlocksOfOtherStagesHaveNoFloatsHere) {
  GptConfig c;
  c.n_layer = 4;
  c.n_head = 2;
  c.n_embd = 32;
  c.vocab_size = 256;
  c.block_size = 32;
  const GptLayout layout = MakeGptLayout(c);
  const std::vector<bool> held = {true, true, true, false, false, false};
  const ShardPlan p = ShardPlan::Make(layout, 1, 2, std::vector<bool>(6, true), held);
  for (int b = 0; b < 6; ++b) {
    EXPECT_EQ(p.held(b), held[b]);
    if (held[b]) {
      EXPECT_GE(p.gathered_floats(b), layout.blocks[b].numel);
    } else {
      EXPECT_EQ(p.gathered_floats(b), 0);
      EXPECT_EQ(p.owned_begin(b), p.owned_end(b));
    }
  }
  EXPECT_EQ(p.describe(), "0-2: sharded, 3-5: elsewhere");
}

TEST(StageActivations, AStageCarvesItsLayersOncePerMicroBatchInFlight) {
  GptConfig c;
  c.n_layer = 4;
  c.n_head = 2;
  c.n_embd = 32;
  c.vocab_size = 256;
  c.block_size = 16;
  const GptModel m(c);
  const ActivationLayout one =
      MakeActivationLayout(m, 2, 16, 0, 4, {.first_layer = 2, .layers = 2});
  const ActivationLayout three = MakeActivationLayout(
      m, 2, 16, 1, 4, {.first_layer = 2, .layers = 2, .in_flight = 3, .with_head = false});
  EXPECT_EQ(three.floats(),
            3 * (three.residual + three.residual + three.block) + three.block /*work*/ +
                three.scratch + 4 * three.residual);
  EXPECT_EQ(one.floats(), one.residual + 2 * one.block + one.head + one.scratch + 4 * one.residual);
  std::vector<float> buffer(size_t(three.floats()));
  const Activations a = CarveActivations(three, buffer.data(), StepLayerOutputOf(m, 2, 16));
  ASSERT_EQ(a.sets.size(), 3u);
  for (const ActivationSet& s : a.sets) {
    EXPECT_EQ(s.outputs[0], nullptr);  // another stage's layer
    EXPECT_EQ(s.outputs[1], nullptr);
    EXPECT_NE(s.outputs[2], nullptr);  // recomputed: its output only
    EXPECT_EQ(s.layers[2], nullptr);
    EXPECT_NE(s.layers[3], nullptr);
    EXPECT_EQ(s.outputs[3], CarveTransformerActs(c, 2, 16, s.layers[3]).out);
  }
  EXPECT_NE(a.sets[0].emb_out, a.sets[1].emb_out);
  EXPECT_EQ(a.head, nullptr);
  EXPECT_TRUE(three.recomputed(2));
  EXPECT_FALSE(three.recomputed(3));
}

}  // namespace
}  // namespace strata::scheduler
