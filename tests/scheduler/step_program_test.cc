#include "scheduler/step_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace strata::scheduler {
namespace {

bool Has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TEST(StepProgram, OrderAndGradientLifetimes) {
  for (int mbs : {1, 3}) {
    for (bool wait : {true, false}) {
      const int L = 3;
      StepProgram p = BuildStepProgram(L, mbs, wait);
      ASSERT_EQ(p.num_blocks, L + 2);
      ASSERT_EQ(p.ops.size(), size_t(mbs) * (2 * L + 4));
      EXPECT_EQ(p.max_slots_per_op(), 4);  // the tied head's backward
      // Every gradient slot is started, then used, then done, within each micro-batch.
      for (int m = 0; m < mbs; ++m) {
        std::map<int, int> state;  // 0 none, 1 started, 2 done
        for (const Op& op : p.ops) {
          if (op.micro_batch != m) continue;
          for (int b : op.grads_started) {
            EXPECT_EQ(state[b], 0) << op.label();
            state[b] = 1;
          }
          for (const SlotUse& u : op.uses) {
            if (u.role == SlotRole::kGrad) {
              EXPECT_EQ(state[u.block], 1) << op.label();
            }
          }
          for (int b : op.grads_done) state[b] = 2;
        }
        for (int b = 0; b < p.num_blocks; ++b) EXPECT_EQ(state[b], 2) << "block " << b;
      }
      // Each block is updated exactly once, after its gradient is final.
      std::map<int, int> updates;
      std::map<int, bool> final_seen;
      for (const Op& op : p.ops) {
        for (int b : op.grads_final) final_seen[b] = true;
        for (int b : op.updates) {
          EXPECT_TRUE(final_seen[b]) << "update of " << b << " before its gradient is final";
          ++updates[b];
        }
      }
      for (int b = 0; b < p.num_blocks; ++b) EXPECT_EQ(updates[b], 1);
      if (wait) {
        for (size_t i = 0; i + 1 < p.ops.size(); ++i) EXPECT_TRUE(p.ops[i].updates.empty());
      } else {
        EXPECT_TRUE(Has(p.ops[p.ops.size() - 3].updates, 2));  // block_bwd of layer 1
        // The embedding before block 1: the next step needs it first.
        EXPECT_EQ(p.ops.back().updates, (std::vector<int>{0, 1}));
      }
    }
  }
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
