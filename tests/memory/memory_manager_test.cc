#include "memory/memory_manager.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "tests/memory/memory_test_util.h"

namespace strata::memory {
namespace {

using testing::CheckPattern;
using testing::FillPattern;
using testing::MakeRig;
using testing::Rig;
using testing::RigConfig;

constexpr uint64_t kPage = 64 * 1024;

TEST(MemoryManagerTest, UnwrittenPageReadsZeros) {
  Rig rig = MakeRig({});
  auto host = rig.mm->acquire_sync(3, Access::kRead);
  ASSERT_TRUE(host.ok()) << host.status().to_string();
  EXPECT_EQ(CheckPattern(host->data(), kPage, 3, 0), -1);
  EXPECT_STREQ(rig.mm->residency(3).state, "clean");
  host->release();
  EXPECT_EQ(rig.mm->stats().nvme_read_bytes, 0u) << "a zero page is not read from NVMe";
}

TEST(MemoryManagerTest, WriteMakesTheNvmeCopyStale) {
  Rig rig = MakeRig({});
  {
    auto w = rig.mm->acquire_sync(1, Access::kWrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, 1, 7);
  }
  ASSERT_TRUE(rig.mm->flush_all().ok());
  ASSERT_TRUE(rig.mm->commit_nvme().ok());
  EXPECT_TRUE(rig.mm->residency(1).valid[2]);
  {
    auto w = rig.mm->acquire_sync(1, Access::kWrite);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(CheckPattern(w->data(), kPage, 1, 7), -1);
    FillPattern(w->data(), kPage, 1, 8);
  }
  PageResidency r = rig.mm->residency(1);
  EXPECT_TRUE(r.valid[1]);
  EXPECT_FALSE(r.valid[2]) << "a host write makes the NVMe copy stale";
  EXPECT_STREQ(r.state, "dirty");
  ASSERT_TRUE(rig.mm->evict_all().ok());
  auto h = rig.mm->acquire_sync(1, Access::kRead);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(CheckPattern(h->data(), kPage, 1, 8), -1);
}

TEST(MemoryManagerTest, NvmeRoundTripThroughFlushCommitAndEviction) {
  Rig rig = MakeRig({});
  for (PageId p = 0; p < 4; ++p) {
    auto w = rig.mm->acquire_sync(p, Access::kOverwrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, p, 100 + p);
  }
  ASSERT_TRUE(rig.mm->flush_all().ok());
  EXPECT_TRUE(rig.mm->residency(2).nvme_staged);
  ASSERT_TRUE(rig.mm->commit_nvme().ok());
  EXPECT_TRUE(rig.mm->residency(2).valid[2]);
  EXPECT_EQ(rig.nvme->commits(), 1u);
  ASSERT_TRUE(rig.mm->evict_all().ok());
  EXPECT_FALSE(rig.mm->residency(2).valid[1]);
  for (PageId p = 0; p < 4; ++p) {
    auto h = rig.mm->acquire_sync(p, Access::kRead);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    EXPECT_EQ(CheckPattern(h->data(), kPage, p, 100 + p), -1);
  }
  MemoryStats s = rig.mm->stats();
  EXPECT_EQ(s.nvme_write_bytes, 4 * kPage);
  EXPECT_EQ(s.nvme_read_bytes, 4 * kPage);
  EXPECT_LE(s.tiers[1].peak_bytes, s.tiers[1].capacity_bytes);
}

TEST(MemoryManagerTest, DirtyHostPagesAreWrittenBackWhenTheBudgetIsFull) {
  RigConfig c;
  c.host_pages = 2;
  Rig rig = MakeRig(c);
  for (PageId p = 0; p < 8; ++p) {
    auto w = rig.mm->acquire_sync(p, Access::kOverwrite);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    FillPattern(w->data(), kPage, p, 1 + p);
  }
  MemoryStats s = rig.mm->stats();
  EXPECT_GE(s.write_backs, 6u);
  EXPECT_GE(s.forced_commits, 1u);
  EXPECT_EQ(s.tiers[1].peak_bytes, 2 * kPage);
  for (PageId p = 0; p < 8; ++p) {
    auto h = rig.mm->acquire_sync(p, Access::kRead);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    EXPECT_EQ(CheckPattern(h->data(), kPage, p, 1 + p), -1) << "page " << p;
  }
}

TEST(MemoryManagerTest, FailedCommitLosesNothing) {
  Rig rig = MakeRig({});
  {
    auto w = rig.mm->acquire_sync(0, Access::kWrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, 0, 5);
  }
  ASSERT_TRUE(rig.mm->flush_all().ok());
  rig.nvme->fail_next_commit();
  Status st = rig.mm->commit_nvme();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("injected"), std::string::npos);
  PageResidency r = rig.mm->residency(0);
  EXPECT_TRUE(r.valid[1]);
  EXPECT_FALSE(r.valid[2]);
  EXPECT_FALSE(r.nvme_staged);
  // The host copy is still the only copy: a second flush + commit works.
  ASSERT_TRUE(rig.mm->flush_all().ok());
  ASSERT_TRUE(rig.mm->commit_nvme().ok());
  ASSERT_TRUE(rig.mm->evict_all().ok());
  auto h = rig.mm->acquire_sync(0, Access::kRead);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(CheckPattern(h->data(), kPage, 0, 5), -1);
}

TEST(MemoryManagerTest, BudgetBelowOnePageIsAStructuredShortfall) {
  MemoryManagerOptions o;
  o.page_bytes = kPage;
  o.num_pages = 4;
  o.host_bytes = kPage / 2;
  auto r = MemoryManager::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("the host budget 32.00 KiB is below one page (64.00 KiB)"),
            std::string::npos)
      << r.status().message();
  const BudgetShortfall* s = DetailOf<BudgetShortfall>(r.status());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->tier, Tier::kHost);
  EXPECT_EQ(s->need_bytes, kPage);
  EXPECT_EQ(s->have_bytes, kPage / 2);
  EXPECT_EQ(r.status().message().find("--"), std::string::npos) << "memory/ names no flag";
  o.host_bytes = 4 * kPage;
  o.page_bytes = 5000;  // not a multiple of 4 KiB (3 * 4096 is a page size now)
  r = MemoryManager::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a multiple of 4 KiB"), std::string::npos)
      << r.status().message();
}

TEST(MemoryManagerTest, BadRequestsAreInvalidArgument) {
  Rig rig = MakeRig({});
  EXPECT_EQ(rig.mm->acquire_sync(999, Access::kRead).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rig.mm->acquire_sync(0, Access::kRead, {.holder = {}, .acquirer = kMaxAcquirers})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(MemoryManagerConcurrentTest, ConcurrentAcquiresShareOneMove) {
  RigConfig c;
  c.nvme_latency_us = 2000;  // the NVMe read takes 2 ms: the two requests overlap
  Rig rig = MakeRig(c);
  {
    auto w = rig.mm->acquire_sync(2, Access::kWrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, 2, 9);
  }
  ASSERT_TRUE(rig.mm->evict_all().ok());
  auto a = rig.mm->acquire(2, Access::kRead);
  auto b = rig.mm->acquire(2, Access::kRead);
  auto ra = a.get();
  auto rb = b.get();
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->data(), rb->data());
  EXPECT_EQ(rig.mm->stats().nvme_read_bytes, kPage);
  EXPECT_EQ(rig.mm->residency(2).readers, 2);
}

TEST(MemoryManagerConcurrentTest, ConcurrentStallReportsWhoHoldsWhat) {
  RigConfig c;
  c.stall_timeout_ms = 200;
  Rig rig = MakeRig(c);
  auto held = rig.mm->acquire_sync(0, Access::kWrite, {.holder = "optimizer block 7"});
  ASSERT_TRUE(held.ok());
  auto waiter = rig.mm->acquire(0, Access::kRead, {.holder = "forward block 7"});
  auto r = waiter.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout);
  EXPECT_NE(r.status().message().find("[write on host by optimizer block 7]"), std::string::npos)
      << r.status().message();
  // Every host frame pinned: a new host page cannot get a frame and says so.
  std::vector<PageRef> refs;
  for (PageId p = 1; p < 4; ++p) {
    auto ref = rig.mm->acquire_sync(p, Access::kRead);
    ASSERT_TRUE(ref.ok());
    refs.push_back(std::move(*ref));
  }
  auto starved = rig.mm->acquire_sync(9, Access::kRead);
  ASSERT_FALSE(starved.ok());
  EXPECT_NE(starved.status().message().find("a free page frame"), std::string::npos);
  const BudgetShortfall* s = DetailOf<BudgetShortfall>(starved.status());
  ASSERT_NE(s, nullptr) << "a frame stall carries the host budget's shortfall";
  EXPECT_EQ(s->tier, Tier::kHost);
  EXPECT_EQ(s->have_bytes, 4 * kPage);
  EXPECT_NE(s->held_by.find("[read on host by"), std::string::npos);
}

TEST(MemoryManagerConcurrentTest, ConcurrentWaiterProceedsAfterRelease) {
  Rig rig = MakeRig({.host_pages = 1});
  auto held = rig.mm->acquire_sync(0, Access::kWrite);
  ASSERT_TRUE(held.ok());
  FillPattern(held->data(), kPage, 0, 3);
  auto waiter = rig.mm->acquire(1, Access::kRead);  // needs the only frame
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  held->release();
  auto r = waiter.get();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  r->release();
  auto back = rig.mm->acquire_sync(0, Access::kRead);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(CheckPattern(back->data(), kPage, 0, 3), -1);
}

TEST(MemoryManagerTest, PrefetchBringsPagesWithoutPinning) {
  Rig rig = MakeRig({});
  {
    auto w = rig.mm->acquire_sync(4, Access::kWrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, 4, 11);
  }
  ASSERT_TRUE(rig.mm->evict_all().ok());
  rig.mm->prefetch(4);
  rig.mm->drain_prefetches();
  PageResidency r = rig.mm->residency(4);
  EXPECT_TRUE(r.valid[1]);
  EXPECT_EQ(r.readers, 0);
  auto h = rig.mm->acquire_sync(4, Access::kRead);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(CheckPattern(h->data(), kPage, 4, 11), -1);
  EXPECT_EQ(rig.mm->stats().nvme_read_bytes, kPage);
  EXPECT_GE(rig.mm->stats().hits, 1u);
}

}  // namespace
}  // namespace strata::memory

namespace strata::memory {
namespace {

TEST(MemoryManagerTest, OverwriteLoadsNothing) {
  testing::Rig rig = testing::MakeRig({});
  {
    auto w = rig.mm->acquire_sync(0, Access::kWrite);
    ASSERT_TRUE(w.ok());
  }
  ASSERT_TRUE(rig.mm->evict_all().ok());
  auto h = rig.mm->acquire_sync(0, Access::kOverwrite);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(rig.mm->stats().nvme_read_bytes, 0u);
  EXPECT_FALSE(rig.mm->residency(0).valid[2]) << "an overwrite makes the NVMe copy stale";
}

TEST(MemoryManagerTest, BeladyPrefetchNeverEvictsAPageNeededSooner) {
  testing::RigConfig c;
  c.host_pages = 1;
  testing::Rig rig = testing::MakeRig(c);
  // Plan: A, B, A (A = page 0, B = page 1); page 2 is never planned.
  rig.mm->set_access_plan({{0}, {1}, {0}});
  { ASSERT_TRUE(rig.mm->acquire_sync(0, Access::kRead).ok()); }  // position 1
  rig.mm->prefetch(2);  // unplanned: must not evict A (needed at 2)
  rig.mm->drain_prefetches();
  EXPECT_TRUE(rig.mm->residency(0).valid[1]);
  EXPECT_FALSE(rig.mm->residency(2).valid[1]);
  rig.mm->prefetch(1);  // needed at 1, before A at 2: may evict A
  rig.mm->drain_prefetches();
  EXPECT_TRUE(rig.mm->residency(1).valid[1]);
  EXPECT_FALSE(rig.mm->residency(0).valid[1]);
  auto b = rig.mm->acquire_sync(1, Access::kRead);
  ASSERT_TRUE(b.ok());
  EXPECT_GE(rig.mm->stats().hits, 1u);
}

// Under LRU the oldest copy goes first, unless a newer one was demoted: it goes before it.
TEST(MemoryManagerTest, DemotedCopyIsEvictedBeforeOlderOnes) {
  RigConfig c;
  c.host_pages = 3;
  c.policy = EvictionPolicy::kLru;
  c.write_back_batch_pages = 1;
  Rig rig = MakeRig(c);
  for (PageId p = 0; p < 3; ++p) {
    auto w = rig.mm->acquire_sync(p, Access::kOverwrite);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
  }
  ASSERT_TRUE(rig.mm->demote(2).ok());  // the newest
  auto next = rig.mm->acquire_sync(3, Access::kOverwrite);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_TRUE(rig.mm->residency(0).valid[1]) << "the oldest copy was evicted, not the demoted one";
  EXPECT_TRUE(rig.mm->residency(1).valid[1]);
  EXPECT_FALSE(rig.mm->residency(2).valid[1]);
  EXPECT_TRUE(rig.mm->residency(2).valid[2]) << "its contents went to NVMe first";
  EXPECT_EQ(rig.mm->demote(99).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::memory
