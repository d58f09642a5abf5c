#include "scheduler/slot_sizes.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_layout.h"

namespace strata::scheduler {
namespace {

GptLayout Layout(int vocab) {
  GptConfig c = *GptPreset("tiny");
  c.vocab_size = vocab;
  return MakeGptLayout(c);
}

TEST(SlotSizes, SmallVocabularyNeedsThreeBlockSlotsAndTwoSmallOnes) {
  const GptLayout layout = Layout(256);
  const BlockSlotBytes b = SlotBytesOf(layout);
  ASSERT_GT(b.transformer, b.embedding);
  ASSERT_GT(b.embedding, b.head);
  // Block backward: P_l, G_l and the embedding's gradient; head backward: two of each small
  // block; one prefetch slot.
  EXPECT_EQ(MinimalSlotSizes(layout),
            (std::vector<uint64_t>{b.transformer, b.transformer, b.transformer, b.embedding,
                                   b.head}));
}

TEST(SlotSizes, LargeVocabularyNeedsTwoEmbeddingSlotsNotFive) {
  const GptLayout layout = Layout(8192);
  const BlockSlotBytes b = SlotBytesOf(layout);
  ASSERT_GT(b.embedding, 2 * b.transformer);
  const std::vector<uint64_t> min = MinimalSlotSizes(layout);
  EXPECT_EQ(min, (std::vector<uint64_t>{b.embedding, b.embedding, b.transformer, b.transformer,
                                        b.head}));
  EXPECT_LT(TotalBytes(min), 3 * b.embedding);  // uniform slots would take 5 embeddings
}

// An untied head's ops hold no slot of the embedding (StepProgram::tied_head): with a large
// vocabulary one embedding slot is enough, where a tied head's backward holds two.
TEST(SlotSizes, AnUntiedHeadNeedsOneEmbeddingSlot) {
  const GptLayout layout = Layout(8192);
  const BlockSlotBytes b = SlotBytesOf(layout);
  ASSERT_GT(b.embedding, 2 * b.transformer);
  EXPECT_EQ(MinimalSlotSizes(layout, layout, /*tied_head=*/false),
            (std::vector<uint64_t>{b.embedding, b.transformer, b.transformer}));
  const std::vector<uint64_t> all = AllResidentSlotSizes(layout, layout, /*tied_head=*/false);
  // Every block's parameters and one gradient slot (G_l, or G_emb alone), of the embedding's size.
  EXPECT_EQ(all.size(), size_t(layout.num_blocks() + 1));
  EXPECT_EQ(std::count(all.begin(), all.end(), b.embedding), 2);
}

// A split block's parameter slot is smaller than its gradient (Note [Split operators]): an untied
// head's block backwards then need a second gradient slot, for the next block's gradient while
// the last one goes down (the prefetch slot is a parameter slot's size).
TEST(SlotSizes, AnUntiedHeadsSplitBlocksKeepASecondGradientSlot) {
  const GptLayout grads = Layout(256);
  GptLayout params = grads;
  for (int b = 1; b + 1 < params.num_blocks(); ++b) params.blocks[b].numel /= 2;
  const BlockSlotBytes p = SlotBytesOf(params), g = SlotBytesOf(grads);
  ASSERT_LT(p.transformer, g.transformer);
  EXPECT_EQ(MinimalSlotSizes(params, grads, /*tied_head=*/false),
            (std::vector<uint64_t>{g.transformer, g.transformer, p.transformer, p.transformer}));
}

TEST(SlotSizes, AllResidentHoldsEveryBlockAndTheGradientsBesideThem) {
  const GptLayout layout = Layout(256);
  const BlockSlotBytes b = SlotBytesOf(layout);
  const std::vector<uint64_t> all = AllResidentSlotSizes(layout);
  EXPECT_EQ(all.size(), size_t(layout.num_blocks() + 2));
  EXPECT_EQ(all.front(), b.transformer);
  EXPECT_EQ(all.back(), b.head);
}

TEST(SlotSizes, CoverBothTakesTheLargerSizeAtEachRank) {
  EXPECT_EQ(CoverBoth({5, 1}, {3, 3, 2}), (std::vector<uint64_t>{5, 3, 2}));
  EXPECT_EQ(CoverBoth({}, {4}), (std::vector<uint64_t>{4}));
  EXPECT_EQ(DescribeSlots({8192, 8192, 4096}), "2 x 8.00 KiB + 1 x 4.00 KiB");
}

}  // namespace
}  // namespace strata::scheduler
