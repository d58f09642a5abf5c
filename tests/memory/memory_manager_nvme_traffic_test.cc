// What the memory manager writes to NVMe and how often it commits: discard() of dead pages
// (nothing written back, reads as zeros) and eviction write-backs that share commits.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "memory/memory_manager.h"
#include "tests/memory/memory_test_util.h"

namespace strata::memory {
namespace {

using testing::CheckPattern;
using testing::FillPattern;
using testing::MakeRig;
using testing::Rig;
using testing::RigConfig;

constexpr uint64_t kPage = 64 * 1024;

// Writes `tag`'s pattern into `page`.
void WritePage(Rig& rig, PageId page, uint64_t tag, Access access = Access::kWrite) {
  auto ref = rig.mm->acquire_sync(page, access);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  FillPattern(ref->data(), rig.mm->page_bytes(), page, tag);
}

// Reads `page` and returns the index of the first word not matching `tag`, or -1.
int64_t ReadPage(Rig& rig, PageId page, uint64_t tag) {
  auto ref = rig.mm->acquire_sync(page, Access::kRead);
  EXPECT_TRUE(ref.ok()) << ref.status().to_string();
  if (!ref.ok()) return 0;
  return CheckPattern(ref->data(), rig.mm->page_bytes(), page, tag);
}

// ---- discard ------------------------------------------------------------------------------

TEST(MemoryManagerDiscardTest, DiscardedPageReadsZeros) {
  Rig rig = MakeRig({});
  WritePage(rig, 1, 5);
  ASSERT_TRUE(rig.mm->flush_all().ok());
  ASSERT_TRUE(rig.mm->commit_nvme().ok());
  PageResidency r = rig.mm->residency(1);
  ASSERT_TRUE(r.valid[1] && r.valid[2]);
  const MemoryStats before = rig.mm->stats();

  ASSERT_TRUE(rig.mm->discard(1).ok());
  r = rig.mm->residency(1);
  EXPECT_FALSE(r.valid[0] || r.valid[1] || r.valid[2] || r.nvme_staged);
  MemoryStats s = rig.mm->stats();
  EXPECT_EQ(s.discards, 1u);
  EXPECT_EQ(s.tiers[1].current_bytes, 0u) << "the host frame went back to its pool";

  EXPECT_EQ(ReadPage(rig, 1, 0), -1);
  s = rig.mm->stats();
  EXPECT_EQ(s.nvme_read_bytes, before.nvme_read_bytes) << "the dead NVMe copy is not read";
  EXPECT_EQ(s.nvme_write_bytes, before.nvme_write_bytes);
}

// Four gradient-like pages dirty on the host; then enough other pages to reuse every frame, a
// flush and a commit. Without discard all four are written back to NVMe; discarded, nothing is.
TEST(MemoryManagerDiscardTest, DiscardedDirtyPagesAreNeverWrittenBack) {
  for (const bool discard : {false, true}) {
    SCOPED_TRACE(discard ? "with discard" : "without discard");
    RigConfig c;
    c.host_pages = 4;
    Rig rig = MakeRig(c);
    for (PageId p = 0; p < 4; ++p) WritePage(rig, p, 10 + p, Access::kOverwrite);
    if (discard) {
      for (PageId p = 0; p < 4; ++p) ASSERT_TRUE(rig.mm->discard(p).ok());
    }
    for (PageId p = 4; p < 12; ++p) EXPECT_EQ(ReadPage(rig, p, 0), -1);
    ASSERT_TRUE(rig.mm->flush_all().ok());
    ASSERT_TRUE(rig.mm->commit_nvme().ok());
    const MemoryStats s = rig.mm->stats();
    if (discard) {
      EXPECT_EQ(s.nvme_write_bytes, 0u);
      EXPECT_EQ(s.write_backs, 0u);
      EXPECT_EQ(s.nvme_commits, 0u) << "nothing was staged, so nothing was committed";
      EXPECT_EQ(s.discards, 4u);
      for (PageId p = 0; p < 4; ++p) EXPECT_EQ(ReadPage(rig, p, 0), -1);
    } else {
      EXPECT_EQ(s.nvme_write_bytes, 4 * kPage);
      for (PageId p = 0; p < 4; ++p) EXPECT_EQ(ReadPage(rig, p, 10 + p), -1);
    }
  }
}

// A staged, uncommitted version of a discarded page: the commit completes it (the tier cannot
// take it back) but the page stays zeros; a new version written after the discard is staged
// only after that commit (the real PageStore, which refuses two versions of a page per batch).
TEST(MemoryManagerDiscardTest, StagedVersionOfADiscardedPageNeverBecomesValid) {
  RigConfig c;
  c.real_store = true;
  Rig rig = MakeRig(c);
  WritePage(rig, 0, 3);
  WritePage(rig, 1, 4);
  ASSERT_TRUE(rig.mm->flush_all().ok());
  ASSERT_TRUE(rig.mm->residency(0).nvme_staged);
  ASSERT_TRUE(rig.mm->discard(0).ok());
  ASSERT_TRUE(rig.mm->discard(1).ok());
  PageResidency r = rig.mm->residency(0);
  EXPECT_FALSE(r.valid[0] || r.valid[1] || r.valid[2] || r.nvme_staged);
  EXPECT_EQ(rig.mm->stats().tiers[1].current_bytes, 2 * kPage)
      << "the staged buffers are held until the commit";

  // The next writer of page 0 needs no commit; page 1 stays dead.
  WritePage(rig, 0, 7, Access::kOverwrite);
  EXPECT_EQ(rig.mm->stats().nvme_commits, 0u);
  // flush commits the dead versions out of the way (forced), then stages page 0's new one.
  ASSERT_TRUE(rig.mm->flush_all().ok());
  EXPECT_EQ(rig.mm->stats().forced_commits, 1u);
  EXPECT_FALSE(rig.mm->residency(1).valid[2]) << "a discarded version committed stays dead";
  EXPECT_TRUE(rig.mm->residency(0).nvme_staged);
  ASSERT_TRUE(rig.mm->commit_nvme().ok());
  EXPECT_EQ(rig.store->lookup(0)->version, 2u);
  const MemoryStats s = rig.mm->stats();
  EXPECT_EQ(s.tiers[1].current_bytes, kPage) << "dead buffers returned; page 0's copy stays";

  ASSERT_TRUE(rig.mm->evict_all().ok());
  EXPECT_EQ(ReadPage(rig, 0, 7), -1);
  EXPECT_EQ(ReadPage(rig, 1, 0), -1);
  EXPECT_EQ(rig.mm->stats().nvme_read_bytes, kPage) << "page 1 is not read from NVMe";
}

TEST(MemoryManagerDiscardTest, FailedCommitOfADiscardedVersionReturnsItsFrame) {
  Rig rig = MakeRig({});
  WritePage(rig, 2, 8);
  ASSERT_TRUE(rig.mm->flush_all().ok());
  ASSERT_TRUE(rig.mm->discard(2).ok());
  rig.nvme->fail_next_commit();
  EXPECT_FALSE(rig.mm->commit_nvme().ok());
  EXPECT_EQ(rig.mm->stats().tiers[1].current_bytes, 0u);
  EXPECT_EQ(ReadPage(rig, 2, 0), -1);
}

TEST(MemoryManagerDiscardTest, BadPageIsInvalidArgumentAndNoNvmeTierIsFine) {
  Rig rig = MakeRig({.with_nvme = false});
  EXPECT_EQ(rig.mm->discard(16).code(), StatusCode::kInvalidArgument);
  WritePage(rig, 3, 6);
  ASSERT_TRUE(rig.mm->discard(3).ok());
  ASSERT_TRUE(rig.mm->discard(3).ok()) << "discarding a zero page again is harmless";
  EXPECT_EQ(ReadPage(rig, 3, 0), -1);
  EXPECT_EQ(rig.mm->stats().discards, 2u);
}

// The documented choice: discard waits for the page's pins, so a caller that holds a pin
// itself gets Timeout with the stall report, and the page is left alone.
TEST(MemoryManagerDiscardTest, DiscardWhileHoldingThePinTimesOutWithAReport) {
  Rig rig = MakeRig({.stall_timeout_ms = 200});
  WritePage(rig, 4, 2);
  auto held = rig.mm->acquire_sync(4, Access::kRead, {.holder = "optimizer 4"});
  ASSERT_TRUE(held.ok());
  Status st = rig.mm->discard(4);
  EXPECT_EQ(st.code(), StatusCode::kTimeout);
  EXPECT_NE(st.message().find("page 4: waited 200 ms for the page to discard it"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("[read on host by optimizer 4]"), std::string::npos);
  EXPECT_EQ(CheckPattern(held->data(), kPage, 4, 2), -1);
  EXPECT_EQ(rig.mm->stats().discards, 0u);
}

TEST(MemoryManagerDiscardConcurrentTest, ConcurrentDiscardWaitsForAnotherThreadsPins) {
  Rig rig = MakeRig({});
  for (const Access access : {Access::kWrite, Access::kRead}) {
    WritePage(rig, 5, 9);
    auto held = rig.mm->acquire_sync(5, access);
    ASSERT_TRUE(held.ok());
    auto discarded = std::async(std::launch::async, [&] { return rig.mm->discard(5); });
    EXPECT_EQ(discarded.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
    EXPECT_EQ(CheckPattern(held->data(), kPage, 5, 9), -1) << "the holder's copy is intact";
    held->release();
    ASSERT_TRUE(discarded.get().ok());
    EXPECT_EQ(ReadPage(rig, 5, 0), -1);
  }
  EXPECT_EQ(rig.mm->stats().discards, 2u);
}

// ---- write-backs sharing commits -----------------------------------------------------------

// 64 pages written in turn through 8 host frames: 56 dirty evictions. Each run of 8 dirty
// victims is staged and committed at once, so they take 7 commits, not 56; the real PageStore
// counts the same commits. write_back_batch_pages = 1 gives back one commit per write-back.
TEST(MemoryManagerWriteBackTest, DirtyEvictionsShareCommits) {
  for (const bool real_store : {false, true}) {
    for (const uint64_t batch : {uint64_t{1}, MemoryManagerOptions{}.write_back_batch_pages}) {
      SCOPED_TRACE((real_store ? "page store, batch " : "fake tier, batch ") +
                   std::to_string(batch));
      RigConfig c;
      c.num_pages = 64;
      c.host_pages = 8;
      c.nvme_pages = 128;
      c.real_store = real_store;
      c.write_back_batch_pages = batch;
      Rig rig = MakeRig(c);
      for (PageId p = 0; p < c.num_pages; ++p) {
        WritePage(rig, p, 100 + p, Access::kOverwrite);
      }
      const MemoryStats s = rig.mm->stats();
      EXPECT_EQ(s.write_backs, 56u);
      EXPECT_EQ(s.nvme_write_bytes, 56 * kPage) << "every page is written once";
      EXPECT_EQ(s.forced_commits, s.nvme_commits);
      if (batch == 1) {
        EXPECT_EQ(s.nvme_commits, 56u);
      } else {
        EXPECT_EQ(s.nvme_commits, 7u);
      }
      if (real_store) {
        EXPECT_EQ(rig.store->stats().commits, s.nvme_commits);
      }
      EXPECT_LE(s.tiers[1].peak_bytes, s.tiers[1].capacity_bytes);
      for (PageId p = 0; p < c.num_pages; ++p) {
        EXPECT_EQ(ReadPage(rig, p, 100 + p), -1) << "page " << p;
      }
    }
  }
}

// In recency order the group is the run of dirty victims at the front: a clean copy ends it
// and is not taken out of turn.
TEST(MemoryManagerWriteBackTest, GroupIsTheRunOfDirtyVictimsAtTheFront) {
  Rig rig = MakeRig({});  // 4 host frames, LRU order (no plan)
  WritePage(rig, 0, 1);
  EXPECT_EQ(ReadPage(rig, 1, 0), -1);  // clean: never written
  WritePage(rig, 2, 3);
  WritePage(rig, 3, 4);
  EXPECT_EQ(ReadPage(rig, 4, 0), -1);  // evicts 0: a run of one, then 1 is clean
  MemoryStats s = rig.mm->stats();
  EXPECT_EQ(s.write_backs, 1u);
  EXPECT_EQ(s.nvme_commits, 1u);
  EXPECT_TRUE(rig.mm->residency(0).valid[2]);
  EXPECT_FALSE(rig.mm->residency(0).valid[1]);
  EXPECT_TRUE(rig.mm->residency(1).valid[1]);
  EXPECT_EQ(ReadPage(rig, 5, 0), -1);  // evicts 1, no write
  EXPECT_EQ(rig.mm->stats().nvme_commits, 1u);
  EXPECT_EQ(ReadPage(rig, 6, 0), -1);  // run 2, 3 in one commit; evicts 2
  s = rig.mm->stats();
  EXPECT_EQ(s.write_backs, 3u);
  EXPECT_EQ(s.nvme_commits, 2u);
  EXPECT_FALSE(rig.mm->residency(2).valid[1]);
  EXPECT_TRUE(rig.mm->residency(3).valid[1] && rig.mm->residency(3).valid[2])
      << "the rest of the run stays resident, clean";
  EXPECT_EQ(ReadPage(rig, 7, 0), -1);  // evicts 3 without I/O
  EXPECT_EQ(rig.mm->stats().nvme_write_bytes, 3 * kPage);
  for (PageId p : {0, 2, 3}) EXPECT_EQ(ReadPage(rig, p, p == 0 ? 1 : p + 1), -1);
}

// A group needs a free NVMe slot per page until its commit (copy-on-write). With 14 slots for
// 12 pages of which 8 fit in host memory, rewriting every page runs out of slots mid-group:
// the manager commits what it staged (freeing the old versions' slots) and goes on.
TEST(MemoryManagerWriteBackTest, GroupsStopShortWhenTheStoreIsFull) {
  RigConfig c;
  c.real_store = true;
  c.num_pages = 12;
  c.host_pages = 8;
  c.nvme_pages = 14;
  Rig rig = MakeRig(c);
  for (uint64_t round = 1; round <= 3; ++round) {
    for (PageId p = 0; p < c.num_pages; ++p) {
      auto ref = rig.mm->acquire_sync(p, Access::kWrite);
      ASSERT_TRUE(ref.ok()) << "round " << round << " page " << p << ": "
                            << ref.status().to_string();
      EXPECT_EQ(CheckPattern(ref->data(), kPage, p, round == 1 ? 0 : 10 * (round - 1) + p), -1);
      FillPattern(ref->data(), kPage, p, 10 * round + p);
    }
  }
  const MemoryStats s = rig.mm->stats();
  EXPECT_LT(s.nvme_commits, s.write_backs);
  EXPECT_LE(rig.store->stats().slots_used_peak, c.nvme_pages);
}

}  // namespace
}  // namespace strata::memory
