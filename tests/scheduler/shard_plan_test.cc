// Note [Shards] in scheduler/shard_plan.h: what each rank owns of a sharded block, the pages
// StatePages gives it, and the decisions' text.
#include "scheduler/shard_plan.h"

#include <gtest/gtest.h>

#include <vector>

#include "models/gpt2/gpt_layout.h"
#include "scheduler/grad_norm.h"
#include "scheduler/state_pages.h"

namespace strata::scheduler {
namespace {

GptLayout Model() {
  GptConfig c = *GptPreset("tiny");
  c.n_embd = 64;
  return MakeGptLayout(c);
}

TEST(ShardPlan, RanksOwnChunkAlignedDisjointRangesCoveringEachShardedBlock) {
  const GptLayout layout = Model();
  for (int ranks : {2, 3, 4}) {
    std::vector<bool> sharded(layout.num_blocks(), true);
    sharded[1] = false;
    std::vector<int64_t> covered(layout.num_blocks(), 0);
    for (int r = 0; r < ranks; ++r) {
      const ShardPlan p = ShardPlan::Make(layout, r, ranks, sharded);
      for (int b = 0; b < layout.num_blocks(); ++b) {
        if (!p.sharded(b)) {
          EXPECT_EQ(p.owned_begin(b), 0);
          EXPECT_EQ(p.owned_end(b), layout.blocks[b].numel);
          EXPECT_EQ(p.gathered_floats(b), layout.blocks[b].numel);
          continue;
        }
        EXPECT_EQ(p.shard_floats(b) % kNormChunkFloats, 0) << "block " << b;
        EXPECT_GE(p.gathered_floats(b), layout.blocks[b].numel);
        EXPECT_EQ(p.owned_begin(b), std::min(layout.blocks[b].numel, r * p.shard_floats(b)));
        EXPECT_EQ(p.owned_begin(b), covered[b]) << "ranks' ranges follow each other";
        covered[b] = p.owned_end(b);
      }
    }
    for (int b = 0; b < layout.num_blocks(); ++b) {
      if (b != 1) {
        EXPECT_EQ(covered[b], layout.blocks[b].numel) << ranks << " ranks, block " << b;
      }
    }
  }
}

TEST(ShardPlan, OneRankShardsNothing) {
  const GptLayout layout = Model();
  const ShardPlan p = ShardPlan::Make(layout, 0, 1, std::vector<bool>(layout.num_blocks(), true));
  EXPECT_FALSE(p.any_sharded());
  EXPECT_EQ(GatheredLayout(layout, p).total_numel, layout.total_numel);
}

// Every float of every sharded block's tensors lies in exactly one rank's pieces, at its own offset
// in the block's layout, and a rank's pages hold only its range.
TEST(ShardPlan, StatePagesOfTheRanksHoldEachTensorFloatOnce) {
  const GptLayout layout = Model();
  const int ranks = 3;
  const std::vector<bool> sharded(layout.num_blocks(), true);
  for (int b = 0; b < layout.num_blocks(); ++b) {
    std::vector<int> count(size_t(layout.blocks[b].numel), 0);
    for (int r = 0; r < ranks; ++r) {
      const ShardPlan p = ShardPlan::Make(layout, r, ranks, sharded);
      auto sp = StatePages::Make(layout, 4096, false, &p);
      ASSERT_TRUE(sp.ok()) << sp.status().to_string();
      for (size_t k = 0; k < sp->pages(b, memory::Role::kParam).size(); ++k) {
        for (const Piece& piece : sp->pieces(b, memory::Role::kParam, k)) {
          const int64_t first = int64_t(piece.block_offset / 4), n = int64_t(piece.bytes / 4);
          EXPECT_GE(first, p.owned_begin(b));
          EXPECT_LE(first + n, p.owned_end(b));
          for (int64_t i = first; i < first + n; ++i) ++count[i];
        }
      }
    }
    for (const TensorSpec& t : layout.blocks[b].tensors) {
      for (int64_t i = t.offset; i < t.offset + t.numel; ++i) {
        ASSERT_EQ(count[i], 1) << "block " << b << " " << t.name << " float " << i - t.offset;
      }
    }
  }
}

TEST(ShardPlan, DecisionsReadBackFromTheirText) {
  const GptLayout layout = MakeGptLayout(*GptPreset("tiny"));  // 4 blocks
  const ShardPlan p = ShardPlan::Make(layout, 0, 2, {false, true, true, false});
  EXPECT_EQ(p.describe(), "0: replicated, 1-2: sharded, 3: replicated");
  auto back = ParseShardDecisions(p.describe(), layout.num_blocks());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, (std::vector<bool>{false, true, true, false}));
  for (const char* bad : {"", "0-2: sharded", "0-3: sharded, 3: replicated", "0-3: halved",
                          "x: sharded, 1-3: sharded"}) {
    EXPECT_FALSE(ParseShardDecisions(bad, layout.num_blocks()).ok()) << bad;
  }
}

}  // namespace
}  // namespace strata::scheduler
