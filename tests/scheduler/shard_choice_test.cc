#include "scheduler/shard_choice.h"

#include <gtest/gtest.h>

#include <vector>

#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_model.h"

namespace strata::scheduler {
namespace {

ShardChoiceInput Input(const GptModel* model, const GridOptions* grid,
                       const CheckpointOptions* ckpt, const BudgetOptions* budgets) {
  const ModelLayout* layout = &model->layout();
  return {.model = model,
          .layout = layout,
          .grid = grid,
          .checkpoints = ckpt,
          .budgets = budgets,
          .held = std::vector<bool>(size_t(layout->num_blocks()), true),
          .micro_rows = 4,
          .micro_batches = 2,
          .seq = 64,
          .threads = 1,
          .device = "sim",
          .dtype = "fp32",
          .export_grads = true};
}

// One rank shards nothing whatever --shard says (nothing to split a block over), so neither the
// search nor sharding's refusals (here: --export-grads, two micro-batches) come into play.
TEST(ShardChoice, OneRankShardsNothing) {
  const GptModel model{*GptPreset("tiny")};
  CheckpointOptions ckpt;
  BudgetOptions budgets;
  for (const char* shard : {"none", "all", "auto"}) {
    GridOptions grid;
    grid.shard = shard;
    auto c = ChooseShards(Input(&model, &grid, &ckpt, &budgets));
    ASSERT_TRUE(c.ok()) << shard << ": " << c.status().to_string();
    EXPECT_FALSE(c->plan.any_sharded()) << shard;
    EXPECT_EQ(c->how, "") << shard;
  }
}

// The plan holds pages of the blocks it is told this rank holds (a pipeline stage's).
TEST(ShardChoice, PlanHoldsTheGivenBlocks) {
  const GptModel model{*GptPreset("tiny")};
  const GptLayout& layout = model.gpt_layout();
  CheckpointOptions ckpt;
  BudgetOptions budgets;
  GridOptions grid;
  ShardChoiceInput in = Input(&model, &grid, &ckpt, &budgets);
  in.held.assign(in.held.size(), false);
  in.held[1] = true;
  auto c = ChooseShards(in);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  for (int b = 0; b < layout.num_blocks(); ++b) EXPECT_EQ(c->plan.held(b), b == 1) << b;
}

}  // namespace
}  // namespace strata::scheduler
