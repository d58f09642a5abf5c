// Note [Split operators] in scheduler/split_plan.h: where a split block's parameters live in each
// rank's slot, and that the rest's broadcasts and the slices' pieces rebuild exactly the block.
#include "scheduler/split_plan.h"

#include <gtest/gtest.h>

#include <vector>

#include "models/gpt2/gpt_blocks.h"

namespace strata::scheduler {
namespace {

GptLayout Model() {
  GptConfig c = *GptPreset("tiny");
  c.n_embd = 64;
  return MakeGptLayout(c);
}

// Float x of a block's layout holds the value x + 1 (0 would hide an unwritten float).
float ValueAt(int64_t x) { return float(x + 1); }

struct Ranks {
  std::vector<ShardPlan> shards;
  std::vector<SplitPlan> splits;
};

Ranks Make(const GptLayout& layout, int ranks, int k) {
  Ranks out;
  for (int r = 0; r < ranks; ++r) {
    out.shards.push_back(ShardPlan::Make(layout, r, ranks,
                                         std::vector<bool>(layout.num_blocks(), true)));
  }
  for (int r = 0; r < ranks; ++r) {  // after: a SplitPlan keeps a copy of its ShardPlan
    auto p = SplitPlan::Make(layout, out.shards[r], SplitFactors(k, out.shards[r], layout));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    out.splits.push_back(*p);
  }
  return out;
}

bool IsSplit(int t) { return t == kFcW || t == kFcProjW; }

TEST(SplitPlan, BroadcastsAndSlicePiecesRebuildEveryTensorOfASplitBlock) {
  const GptLayout layout = Model();
  for (int ranks : {2, 3}) {
    for (int k : {2, 4}) {
      const Ranks rk = Make(layout, ranks, k);
      for (int b = 1; b + 1 < layout.num_blocks(); ++b) {
        const BlockSpec& spec = layout.blocks[b];
        ASSERT_TRUE(rk.splits[0].split(b));
        // Each rank's slot after its pages' upload: its own floats at param_slot_offset.
        std::vector<std::vector<float>> slot(ranks);
        for (int r = 0; r < ranks; ++r) {
          EXPECT_LT(rk.splits[r].param_slot_floats(b), rk.shards[r].gathered_floats(b))
              << "a split block's parameter slot holds less than the gathered block";
          EXPECT_EQ(rk.splits[r].param_slot_floats(b), rk.splits[0].param_slot_floats(b))
              << "every rank has the same slots (the same loads and gathers)";
          slot[r].assign(size_t(rk.splits[r].param_slot_floats(b)), 0.0f);
          for (size_t t = 0; t < spec.tensors.size(); ++t) {
            const TensorSpec& ts = spec.tensors[t];
            const int64_t lo = std::max(ts.offset, rk.shards[r].owned_begin(b));
            const int64_t hi = std::min(ts.offset + ts.numel, rk.shards[r].owned_end(b));
            for (int64_t x = lo; x < hi; ++x) {
              const int64_t at = rk.splits[r].param_slot_offset(b, int(t), x);
              ASSERT_GE(at, 0);
              ASSERT_LT(at, rk.splits[r].param_slot_floats(b));
              slot[r][size_t(at)] = ValueAt(x);
            }
          }
        }
        // The rest: each owner's range broadcast to every rank (the same ranges on every rank).
        for (int q = 0; q < ranks; ++q) {
          const auto range = rk.splits[q].rest_range(b, q);
          for (int r = 0; r < ranks; ++r) {
            ASSERT_EQ(rk.splits[r].rest_range(b, q), range);
            std::copy(slot[q].begin() + range.first, slot[q].begin() + range.second,
                      slot[r].begin() + range.first);
          }
        }
        for (int r = 0; r < ranks; ++r) {
          for (size_t t = 0; t < spec.tensors.size(); ++t) {
            if (IsSplit(int(t))) continue;
            const TensorSpec& ts = spec.tensors[t];
            for (int64_t x = ts.offset; x < ts.offset + ts.numel; ++x) {
              ASSERT_EQ(slot[r][size_t(rk.splits[r].param_slot_offset(b, int(t), x))], ValueAt(x))
                  << "rank " << r << " of " << ranks << ", block " << b << ", " << ts.name;
            }
          }
        }
        // Each slice: its owners' pieces, copied from the root's slot, are the slice's rows.
        for (int t : SplitTensors(spec)) {
          const TensorSpec& ts = spec.tensors[t];
          int next_row = 0;
          for (int s = 0; s < k; ++s) {
            const auto [r0, r1] = rk.splits[0].slice_rows(b, t, s);
            EXPECT_EQ(r0, next_row);
            EXPECT_EQ(std::make_pair(r0, r1), LinearSliceRows(int(ts.shape[0]), k, s));
            next_row = r1;
            const int64_t floats = int64_t(r1 - r0) * ts.shape[1];
            EXPECT_LE(floats, rk.splits[0].slice_buffer_floats());
            std::vector<float> buffer(size_t(floats), 0.0f);
            for (int r = 0; r < ranks; ++r) {
              for (const SlicePiece& p : rk.splits[r].slice_pieces(b, t, s)) {
                if (p.root != r) continue;  // what rank r sends
                ASSERT_GE(p.src, 0);
                std::copy_n(slot[r].begin() + p.src, p.floats, buffer.begin() + p.dest);
              }
            }
            for (int64_t i = 0; i < floats; ++i) {
              ASSERT_EQ(buffer[size_t(i)], ValueAt(ts.offset + int64_t(r0) * ts.shape[1] + i))
                  << ranks << " ranks, K " << k << ", block " << b << ", " << ts.name
                  << ", slice " << s;
            }
          }
          EXPECT_EQ(next_row, ts.shape[0]) << "the slices cover every row";
        }
      }
    }
  }
}

TEST(SplitPlan, OnlySplitsShardedTransformerBlocksByADivisorOfTheChunks) {
  const GptLayout layout = Model();
  std::vector<bool> sharded(layout.num_blocks(), true);
  sharded[2] = false;
  const ShardPlan shards = ShardPlan::Make(layout, 0, 2, sharded);
  const std::vector<int> factors = SplitFactors(2, shards, layout);
  EXPECT_EQ(factors, (std::vector<int>{1, 2, 1, 1})) << "not the embedding, head or block 2";
  auto plan = SplitPlan::Make(layout, shards, factors);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->describe(), "2 for blocks 1");
  EXPECT_EQ(plan->param_slot_floats(2), layout.blocks[2].numel);
  EXPECT_EQ(plan->param_slot_offset(2, kFcW, 123), 123) << "a whole block maps to itself";
  EXPECT_FALSE(SplitPlan::Make(layout, shards, {1, 3, 1, 1}).ok()) << "3 does not divide 4";
  EXPECT_FALSE(SplitPlan::Make(layout, shards, {1, 2, 2, 1}).ok()) << "block 2 is replicated";
  EXPECT_FALSE(SplitPlan::Make(layout, shards, {2, 1, 1, 1}).ok()) << "the embedding";
  auto none = SplitPlan::Make(layout, shards, {1, 1, 1, 1});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->any_split());
  EXPECT_EQ(none->describe(), "1");
  EXPECT_EQ(none->slice_buffer_floats(), 0);
}

}  // namespace
}  // namespace strata::scheduler
