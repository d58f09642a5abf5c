#include "scheduler/slot_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/device/device.h"

namespace strata::scheduler {
namespace {

// Two transformer layers, one micro-batch, clipping: blocks 0 (embedding) .. 3 (head). Ops:
// 0 embed_fwd, 1 fwd h.0, 2 fwd h.1, 3 head_fwd, 4 head_bwd, 5 bwd h.1, 6 bwd h.0, 7 embed_bwd.
class SlotCacheTest : public ::testing::Test {
 protected:
  SlotCacheTest() : program_(BuildStepProgram(2, 1, true)), blocks_(4), cache_(program_, blocks_) {
    for (int i = 0; i < 3; ++i) cache_.add(buffers_[i], 1024);
  }
  void Hold(int slot, int block, SlotRole role = SlotRole::kParam) {
    cache_[slot].block = block;
    cache_[slot].role = role;
    cache_[slot].version = blocks_[block].param_version;
    cache_[slot].grad_active = role == SlotRole::kGrad;
  }

  StepProgram program_;
  std::vector<BlockState> blocks_;
  SlotCache cache_;
  float buffers_[3][256] = {};
};

TEST_F(SlotCacheTest, FindsCurrentParametersAndActiveGradientsOnly) {
  Hold(0, 1);
  Hold(1, 2, SlotRole::kGrad);
  EXPECT_EQ(cache_.find(1, SlotRole::kParam), 0);
  EXPECT_EQ(cache_.find(2, SlotRole::kGrad), 1);
  EXPECT_EQ(cache_.find(2, SlotRole::kParam), -1);
  ++blocks_[1].param_version;  // an update was submitted: the slot is stale
  EXPECT_EQ(cache_.find(1, SlotRole::kParam), -1);
}

TEST_F(SlotCacheTest, EvictsTheFarthestNextUseAndNeverAnActiveGradient) {
  // At op 1 (fwd h.0): block 2 is next used at op 2, block 3 (head) at op 3.
  Hold(0, 2);
  Hold(1, 3);
  Hold(2, 1, SlotRole::kGrad);
  EXPECT_EQ(cache_.choose_victim(1, {}, 1024), 1);
  EXPECT_EQ(cache_.choose_victim(1, {1}, 1024), 0);
  EXPECT_EQ(cache_.choose_victim(1, {0, 1}, 1024), -1);  // slot 2 accumulates a gradient
  EXPECT_EQ(cache_.choose_victim(1, {}, 2048), -1);      // no slot is large enough
}

TEST_F(SlotCacheTest, AUseAfterTheStepsUpdateIsDeadUnlessTheUpdateWasSubmitted) {
  // At op 7 (embed_bwd) every block's next use lies in the next step, after its update: all
  // three slots are dead, and among equal dead slots the first goes.
  Hold(0, 3);
  Hold(1, 2);
  Hold(2, 1);
  EXPECT_EQ(cache_.choose_victim(7, {}, 1024), 0);
  // Once the head's update of this step was submitted (its slot refreshed in place), its use
  // in the next step counts: slot 0 is live, and a dead slot goes first.
  blocks_[3].updated_this_step = true;
  EXPECT_EQ(cache_.choose_victim(7, {}, 1024), 1);
}

TEST_F(SlotCacheTest, AmongDeadSlotsTheSmallestThatFitsGoesFirst) {
  float big[512] = {};
  cache_.add(big, 2048);
  // Slot 3 (2048 bytes) and slots 0..2 (1024) are all empty: a 1024-byte block takes a small one.
  EXPECT_EQ(cache_.choose_victim(0, {}, 1024), 0);
  EXPECT_EQ(cache_.choose_victim(0, {}, 2048), 3);
}

TEST_F(SlotCacheTest, RefreshHandsTheOptimizersEventToTheSlot) {
  auto created = CreateSimDevice({.capacity_bytes = 1 << 20});
  ASSERT_TRUE(created.ok());
  std::unique_ptr<Device> device = std::move(*created);
  Hold(0, 1);
  EXPECT_EQ(cache_.mark_refresh(2, 1).dst, nullptr);  // no slot holds block 2
  ++blocks_[1].param_version;
  RefreshTarget t = cache_.mark_refresh(1, blocks_[1].param_version);
  ASSERT_EQ(t.dst, buffers_[0]);
  EXPECT_EQ(cache_.find(1, SlotRole::kParam), 0);  // being refreshed to the current version
  std::shared_ptr<Event> uploaded = device->create_event();
  t.done->set_value(uploaded);
  ASSERT_TRUE(cache_.resolve_refresh(0).ok());
  EXPECT_EQ(cache_[0].ready, uploaded);
  EXPECT_EQ(cache_[0].last_use, uploaded);
  // A failed update surfaces where the slot is next used.
  ++blocks_[1].param_version;
  t = cache_.mark_refresh(1, blocks_[1].param_version);
  t.done->set_value(Status::IoError("disk gone"));
  EXPECT_FALSE(cache_.resolve_refresh(0).ok());
}

}  // namespace
}  // namespace strata::scheduler
