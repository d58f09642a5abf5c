#include "scheduler/step_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace strata::scheduler {
namespace {

// Every gradient slot is started (zeroed or loaded), used, then done (sent down), over and
// over; every use of a gradient lies between a start and a done.
void ExpectGradientLifetimes(const StepProgram& p, const std::string& tag) {
  std::map<int, int> state, starts;  // 0 none, 1 started, 2 done
  for (const Op& op : p.ops) {
    for (int b : op.grads_started) {
      EXPECT_NE(state[b], 1) << tag << " " << op.label();
      state[b] = 1;
      ++starts[b];
    }
    for (const SlotUse& u : op.uses) {
      if (u.role == SlotRole::kGrad) {
        EXPECT_EQ(state[u.block], 1) << tag << " " << op.label();
      }
    }
    for (int b : op.grads_done) state[b] = 2;
  }
  for (int b = 0; b < p.num_blocks; ++b) {
    EXPECT_EQ(state[b], 2) << tag << " block " << b;
    // Layer-major starts and sends down each gradient once; so does the tied embedding's.
    if (p.order == MicroBatchOrder::kLayerMajor || b == 0) {
      EXPECT_EQ(starts[b], 1) << tag << " block " << b;
    }
  }
}

// Note [Tied gradient order]: the ops that touch the embedding's gradient are every head_bwd,
// micro-batch 0 first, then every embed_bwd.
void ExpectTiedGradientOrder(const StepProgram& p, const std::string& tag) {
  std::vector<std::string> seen, want;
  for (const Op& op : p.ops) {
    for (const SlotUse& u : op.uses) {
      if (u.block == 0 && u.role == SlotRole::kGrad) seen.push_back(op.label());
    }
  }
  for (OpKind kind : {OpKind::kHeadBwd, OpKind::kEmbedBwd}) {
    for (int m = 0; m < p.micro_batches; ++m) {
      Op op;
      op.kind = kind;
      op.block = kind == OpKind::kHeadBwd ? p.num_blocks - 1 : 0;
      op.micro_batch = m;
      want.push_back(op.label());
    }
  }
  EXPECT_EQ(seen, want) << tag;
}

TEST(StepProgram, OrderAndGradientLifetimes) {
  for (MicroBatchOrder order : {MicroBatchOrder::kMicroBatchMajor, MicroBatchOrder::kLayerMajor}) {
    for (int mbs : {1, 3}) {
      for (bool wait : {true, false}) {
        const int L = 3;
        const std::string tag = std::string(MicroBatchOrderName(order)) + " mbs " +
                                std::to_string(mbs) + (wait ? " wait" : "");
        StepProgram p = BuildStepProgram(L, mbs, wait, order);
        ASSERT_EQ(p.num_blocks, L + 2);
        ASSERT_EQ(p.ops.size(), size_t(mbs) * (2 * L + 4));
        EXPECT_EQ(p.max_slots_per_op(), 4);  // the tied head's backward
        ExpectGradientLifetimes(p, tag);
        ExpectTiedGradientOrder(p, tag);
        // Each block is updated exactly once, after its gradient is final.
        std::map<int, int> updates;
        std::map<int, bool> final_seen;
        for (const Op& op : p.ops) {
          for (int b : op.grads_final) final_seen[b] = true;
          for (int b : op.updates) {
            EXPECT_TRUE(final_seen[b]) << tag << ": update of " << b << " before it is final";
            ++updates[b];
          }
        }
        for (int b = 0; b < p.num_blocks; ++b) EXPECT_EQ(updates[b], 1) << tag;
        if (wait) {
          for (size_t i = 0; i + 1 < p.ops.size(); ++i) EXPECT_TRUE(p.ops[i].updates.empty());
          continue;
        }
        // During backward: each transformer block but the first right where it is final.
        for (const Op& op : p.ops) {
          if (!op.grads_final.empty() && op.grads_final[0] >= 2) {
            EXPECT_EQ(op.updates, op.grads_final) << tag << " " << op.label();
          }
        }
        // The embedding before block 1: the next step needs it first.
        EXPECT_EQ(p.ops.back().updates, (std::vector<int>{0, 1})) << tag;
      }
    }
  }
}

// Layer-major: every micro-batch through a block before the next block.
TEST(StepProgram, LayerMajorRunsEveryMicroBatchThroughABlock) {
  const StepProgram p = BuildStepProgram(2, 2, true, MicroBatchOrder::kLayerMajor);
  std::vector<std::string> labels;
  for (const Op& op : p.ops) labels.push_back(op.label());
  EXPECT_EQ(labels, (std::vector<std::string>{
                        "embed_fwd 0 mb0", "embed_fwd 0 mb1", "block_fwd 1 mb0", "block_fwd 1 mb1",
                        "block_fwd 2 mb0", "block_fwd 2 mb1", "head_fwd 3 mb0", "head_bwd 3 mb0",
                        "head_fwd 3 mb1", "head_bwd 3 mb1", "block_bwd 2 mb0", "block_bwd 2 mb1",
                        "block_bwd 1 mb0", "block_bwd 1 mb1", "embed_bwd 0 mb0",
                        "embed_bwd 0 mb1"}));
}

// An untied head (a LLaMA without --tie-embeddings) reads nothing of block 0: its ops use only
// its own slots, and the first embedding backward starts the embedding's gradient; the
// lifetimes hold in both orders.
TEST(StepProgram, AnUntiedHeadUsesNoSlotOfTheEmbedding) {
  for (MicroBatchOrder order : {MicroBatchOrder::kMicroBatchMajor, MicroBatchOrder::kLayerMajor}) {
    const StepProgram p = BuildStepProgram(2, 3, true, order, /*tied_head=*/false);
    const std::string tag = MicroBatchOrderName(order);
    EXPECT_FALSE(p.tied_head);
    ExpectGradientLifetimes(p, tag);
    for (const Op& op : p.ops) {
      if (op.kind != OpKind::kHeadFwd && op.kind != OpKind::kHeadBwd) continue;
      for (const SlotUse& u : op.uses) EXPECT_EQ(u.block, 3) << tag << " " << op.label();
    }
    const auto first_embed_bwd = std::find_if(p.ops.begin(), p.ops.end(), [](const Op& op) {
      return op.kind == OpKind::kEmbedBwd;
    });
    ASSERT_NE(first_embed_bwd, p.ops.end());
    EXPECT_EQ(first_embed_bwd->grads_started, std::vector<int>{0}) << tag;
  }
  // Tied (the default), the head's ops read and write block 0's slots.
  const StepProgram tied = BuildStepProgram(2, 3, true);
  EXPECT_TRUE(tied.tied_head);
  ExpectTiedGradientOrder(tied, "tied");
}

TEST(StepProgram, NextUseIsCyclic) {
  StepProgram p = BuildStepProgram(2, 1, true);
  // ops: embed_fwd(0) fwd1 fwd2 head_fwd head_bwd bwd2 bwd1 embed_bwd
  EXPECT_EQ(p.next_use(0, SlotRole::kParam, 0), 0u);
  EXPECT_EQ(p.next_use(0, SlotRole::kParam, 1), 2u);  // head_fwd at 3
  EXPECT_EQ(p.next_use(1, SlotRole::kParam, 7), 2u);  // wraps to fwd1 at 1
  EXPECT_EQ(p.next_use(0, SlotRole::kGrad, 0), 4u);   // head_bwd
  EXPECT_EQ(p.next_use(5, SlotRole::kParam, 0), StepProgram::kNever);
}

}  // namespace
}  // namespace strata::scheduler
