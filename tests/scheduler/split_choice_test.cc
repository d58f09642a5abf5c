#include "scheduler/split_choice.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_model.h"

namespace strata::scheduler {
namespace {

class SplitChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shards_ = ShardPlan::Replicated(layout_);
    gathered_ = GatheredLayout(layout_, shards_);
    in_.model = &model_;
    in_.layout = &gathered_;
    in_.micro_rows = 4;
    in_.batch = 4;
    in_.seq = 64;
    in_.page_bytes = 16384;
    in_.param_pages = 16;
    in_.grad_pages = 16;
    in_.moment_pages = 32;
  }
  SplitChoiceInput Input(const std::string& split_ops) {
    return {.layout = &layout_,
            .shards = &shards_,
            .gathered_layout = &gathered_,
            .split_ops = split_ops,
            .gpu_mem = in_.gpu_mem,
            .ranks = nullptr};
  }
  GptModel model_{*GptPreset("tiny")};
  const GptLayout& layout_ = model_.gpt_layout();
  ModelLayout gathered_;
  ShardPlan shards_;
  MemoryPlanInput in_;
};

// Nothing sharded: every --split-ops keeps the blocks whole, and the plan is the memory plan's
// (auto never asks the other ranks: there is nothing to split).
TEST_F(SplitChoiceTest, WholeBlocksWhenNothingIsSharded) {
  auto plain = MakeMemoryPlan(in_);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  for (const char* split_ops : {"1", "2", "auto"}) {
    auto c = ChooseSplit(Input(split_ops), in_);
    ASSERT_TRUE(c.ok()) << split_ops << ": " << c.status().to_string();
    EXPECT_FALSE(c->split.any_split()) << split_ops;
    EXPECT_EQ(c->how, "1") << split_ops;
    EXPECT_EQ(c->plan.device_bytes, plain->device_bytes) << split_ops;
    EXPECT_EQ(c->plan.slots, plain->slots) << split_ops;
    EXPECT_EQ(c->plan.slice_bytes, 0u) << split_ops;
  }
}

// A budget no factor fits is the memory plan's own refusal, its number and flag unchanged.
TEST_F(SplitChoiceTest, BudgetBelowTheMinimumIsTheMemoryPlansRefusal) {
  auto full = MakeMemoryPlan(in_);
  ASSERT_TRUE(full.ok());
  in_.gpu_mem = full->min_device_bytes - 1;
  auto plain = MakeMemoryPlan(in_);
  ASSERT_FALSE(plain.ok());
  auto c = ChooseSplit(Input("auto"), in_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message(), plain.status().message());
}

}  // namespace
}  // namespace strata::scheduler
