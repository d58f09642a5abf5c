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

TEST(MemoryManagerTest, UnwrittenPageReadsZerosOnEveryTier) {
  Rig rig = MakeRig({});
  auto host = rig.mm->acquire_sync(3, Tier::kHost, Access::kRead);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(CheckPattern(host->data(), kPage, 3, 0), -1);
  host->release();
  auto dev = rig.mm->acquire_sync(5, Tier::kDevice, Access::kRead);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_TRUE(rig.device->is_device_memory(dev->data(), kPage));
  std::vector<char> back(kPage, 1);
  auto stream = rig.device->create_stream("test");
  ASSERT_TRUE(testing::CopyAndWait(*rig.device, *stream, back.data(), dev->data(), kPage,
                                   CopyKind::kDeviceToHost)
                  .ok());
  EXPECT_EQ(CheckPattern(back.data(), kPage, 5, 0), -1);
}

TEST(MemoryManagerTest, HostWriteMovesToDeviceAndBack) {
  Rig rig = MakeRig({});
  {
    auto w = rig.mm->acquire_sync(1, Tier::kHost, Access::kWrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, 1, 7);
  }
  auto stream = rig.device->create_stream("test");
  {
    auto d = rig.mm->acquire_sync(1, Tier::kDevice, Access::kWrite);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    std::vector<char> buf(kPage);
    ASSERT_TRUE(testing::CopyAndWait(*rig.device, *stream, buf.data(), d->data(), kPage,
                                     CopyKind::kDeviceToHost)
                    .ok());
    EXPECT_EQ(CheckPattern(buf.data(), kPage, 1, 7), -1);
    FillPattern(buf.data(), kPage, 1, 8);
    ASSERT_TRUE(testing::CopyAndWait(*rig.device, *stream, d->data(), buf.data(), kPage,
                                     CopyKind::kHostToDevice)
                    .ok());
  }
  PageResidency r = rig.mm->residency(1);
  EXPECT_TRUE(r.valid[0]);
  EXPECT_FALSE(r.valid[1]) << "a device write makes the host copy stale";
  auto h = rig.mm->acquire_sync(1, Tier::kHost, Access::kRead);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(CheckPattern(h->data(), kPage, 1, 8), -1);
  MemoryStats s = rig.mm->stats();
  EXPECT_EQ(s.h2d_bytes, kPage);
  EXPECT_EQ(s.d2h_bytes, kPage);
}

TEST(MemoryManagerTest, NvmeRoundTripThroughFlushCommitAndEviction) {
  Rig rig = MakeRig({});
  for (PageId p = 0; p < 4; ++p) {
    auto w = rig.mm->acquire_sync(p, Tier::kHost, Access::kOverwrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, p, 100 + p);
  }
  ASSERT_TRUE(rig.mm->flush_all().ok());
  EXPECT_TRUE(rig.mm->residency(2).nvme_staged);
  ASSERT_TRUE(rig.mm->commit_nvme().ok());
  EXPECT_TRUE(rig.mm->residency(2).valid[2]);
  EXPECT_EQ(rig.nvme->commits(), 1u);
  ASSERT_TRUE(rig.mm->evict_all(Tier::kHost).ok());
  EXPECT_FALSE(rig.mm->residency(2).valid[1]);
  for (PageId p = 0; p < 4; ++p) {
    auto d = rig.mm->acquire_sync(p, Tier::kDevice, Access::kRead);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto h = rig.mm->acquire_sync(p, Tier::kHost, Access::kRead);  // the staging copy
    ASSERT_TRUE(h.ok());
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
    auto w = rig.mm->acquire_sync(p, Tier::kHost, Access::kOverwrite);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    FillPattern(w->data(), kPage, p, 1 + p);
  }
  MemoryStats s = rig.mm->stats();
  EXPECT_GE(s.write_backs, 6u);
  EXPECT_GE(s.forced_commits, 1u);
  EXPECT_EQ(s.tiers[1].peak_bytes, 2 * kPage);
  for (PageId p = 0; p < 8; ++p) {
    auto h = rig.mm->acquire_sync(p, Tier::kHost, Access::kRead);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(CheckPattern(h->data(), kPage, p, 1 + p), -1) << "page " << p;
  }
}

TEST(MemoryManagerTest, FailedCommitLosesNothing) {
  Rig rig = MakeRig({});
  {
    auto w = rig.mm->acquire_sync(0, Tier::kHost, Access::kWrite);
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
  ASSERT_TRUE(rig.mm->evict_all(Tier::kHost).ok());
  auto h = rig.mm->acquire_sync(0, Tier::kHost, Access::kRead);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(CheckPattern(h->data(), kPage, 0, 5), -1);
}

TEST(MemoryManagerTest, BudgetBelowOnePageIsAClearError) {
  auto device = CreateSimDevice({.capacity_bytes = 16 * kPage});
  ASSERT_TRUE(device.ok());
  MemoryManagerOptions o;
  o.page_bytes = kPage;
  o.num_pages = 4;
  o.device = device->get();
  o.budgets.device_bytes = 8 * kPage;
  o.budgets.host_bytes = kPage / 2;
  auto r = MemoryManager::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("--host-mem 32.00 KiB is below one page (64.00 KiB)"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("raise --host-mem to at least 64K"), std::string::npos);
  o.budgets.host_bytes = 4 * kPage;
  o.budgets.device_bytes = 1000;
  r = MemoryManager::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--gpu-mem"), std::string::npos) << r.status().message();
  o.page_bytes = 3 * 4096;
  r = MemoryManager::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(MemoryManagerTest, PinnedWorkingSetAboveBudgetFailsAtOnce) {
  Rig rig = MakeRig({});  // 4 device pages
  std::vector<PageRequest> req;
  for (PageId p = 0; p < 5; ++p) req.push_back({p, Tier::kDevice, Access::kRead});
  auto f = rig.mm->acquire_all(req);
  ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  auto r = f.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("5 pages (320.00 KiB) must be pinned on the device at once"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("raise --gpu-mem to at least 320K"), std::string::npos);
  req.pop_back();
  auto ok = rig.mm->acquire_all(req).get();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->size(), 4u);
  EXPECT_EQ(rig.mm->stats().tiers[0].pinned_pages, 4u);
}

TEST(MemoryManagerTest, BadRequestsAreInvalidArgument) {
  Rig rig = MakeRig({});
  EXPECT_EQ(rig.mm->acquire_sync(999, Tier::kHost, Access::kRead).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(rig.mm->acquire_sync(0, Tier::kNvme, Access::kRead).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(MemoryManagerConcurrentTest, ConcurrentAcquiresShareOneMove) {
  RigConfig c;
  c.link_gbps = 0.05;  // 64 KiB takes ~1.3 ms: the two requests overlap
  Rig rig = MakeRig(c);
  {
    auto w = rig.mm->acquire_sync(2, Tier::kHost, Access::kWrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, 2, 9);
  }
  auto a = rig.mm->acquire(2, Tier::kDevice, Access::kRead);
  auto b = rig.mm->acquire(2, Tier::kDevice, Access::kRead);
  auto ra = a.get();
  auto rb = b.get();
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->data(), rb->data());
  EXPECT_EQ(rig.mm->stats().h2d_bytes, kPage);
  EXPECT_EQ(rig.mm->residency(2).readers, 2);
}

TEST(MemoryManagerConcurrentTest, ConcurrentStallReportsWhoHoldsWhat) {
  RigConfig c;
  c.stall_timeout_ms = 200;
  Rig rig = MakeRig(c);
  auto held = rig.mm->acquire_sync(0, Tier::kHost, Access::kWrite, {.holder = "optimizer block 7"});
  ASSERT_TRUE(held.ok());
  auto waiter = rig.mm->acquire(0, Tier::kHost, Access::kRead, {.holder = "forward block 7"});
  auto r = waiter.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout);
  EXPECT_NE(r.status().message().find("[write on host by optimizer block 7]"), std::string::npos)
      << r.status().message();
  // Every host frame pinned: a new host page cannot get a frame and says so.
  std::vector<PageRef> refs;
  for (PageId p = 1; p < 4; ++p) {
    auto ref = rig.mm->acquire_sync(p, Tier::kHost, Access::kRead);
    ASSERT_TRUE(ref.ok());
    refs.push_back(std::move(*ref));
  }
  auto starved = rig.mm->acquire_sync(9, Tier::kHost, Access::kRead);
  ASSERT_FALSE(starved.ok());
  EXPECT_NE(starved.status().message().find("a free page frame"), std::string::npos);
  EXPECT_NE(starved.status().message().find("raise --host-mem"), std::string::npos);
}

TEST(MemoryManagerConcurrentTest, ConcurrentWaiterProceedsAfterRelease) {
  Rig rig = MakeRig({.host_pages = 1});
  auto held = rig.mm->acquire_sync(0, Tier::kHost, Access::kWrite);
  ASSERT_TRUE(held.ok());
  FillPattern(held->data(), kPage, 0, 3);
  auto waiter = rig.mm->acquire(1, Tier::kHost, Access::kRead);  // needs the only frame
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  held->release();
  auto r = waiter.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  r->release();
  auto back = rig.mm->acquire_sync(0, Tier::kHost, Access::kRead);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(CheckPattern(back->data(), kPage, 0, 3), -1);
}

TEST(MemoryManagerTest, PrefetchBringsPagesWithoutPinning) {
  Rig rig = MakeRig({});
  {
    auto w = rig.mm->acquire_sync(4, Tier::kHost, Access::kWrite);
    ASSERT_TRUE(w.ok());
    FillPattern(w->data(), kPage, 4, 11);
  }
  rig.mm->prefetch(4, Tier::kDevice);
  rig.mm->drain_prefetches();
  PageResidency r = rig.mm->residency(4);
  EXPECT_TRUE(r.valid[0]);
  EXPECT_EQ(r.readers, 0);
  auto d = rig.mm->acquire_sync(4, Tier::kDevice, Access::kRead);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(rig.mm->stats().h2d_bytes, kPage);
  EXPECT_GE(rig.mm->stats().hits, 1u);
}

}  // namespace
}  // namespace strata::memory

namespace strata::memory {
namespace {

TEST(MemoryManagerTest, OverwriteLoadsNothing) {
  testing::Rig rig = testing::MakeRig({});
  {
    auto w = rig.mm->acquire_sync(0, Tier::kHost, Access::kWrite);
    ASSERT_TRUE(w.ok());
  }
  auto d = rig.mm->acquire_sync(0, Tier::kDevice, Access::kOverwrite);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(rig.mm->stats().h2d_bytes, 0u);
  EXPECT_FALSE(rig.mm->residency(0).valid[1]) << "an overwrite makes the host copy stale";
}

TEST(MemoryManagerTest, BeladyPrefetchNeverEvictsAPageNeededSooner) {
  testing::RigConfig c;
  c.device_pages = 1;
  testing::Rig rig = testing::MakeRig(c);
  // Plan: A, B, A on the device (A = page 0, B = page 1); page 2 is never planned.
  rig.mm->set_access_plan({{0, Tier::kDevice}, {1, Tier::kDevice}, {0, Tier::kDevice}});
  { ASSERT_TRUE(rig.mm->acquire_sync(0, Tier::kDevice, Access::kRead).ok()); }  // position 1
  rig.mm->prefetch(2, Tier::kDevice);  // unplanned: must not evict A (needed at 2)
  rig.mm->drain_prefetches();
  EXPECT_TRUE(rig.mm->residency(0).valid[0]);
  EXPECT_FALSE(rig.mm->residency(2).valid[0]);
  rig.mm->prefetch(1, Tier::kDevice);  // needed at 1, before A at 2: may evict A
  rig.mm->drain_prefetches();
  EXPECT_TRUE(rig.mm->residency(1).valid[0]);
  EXPECT_FALSE(rig.mm->residency(0).valid[0]);
  auto b = rig.mm->acquire_sync(1, Tier::kDevice, Access::kRead);
  ASSERT_TRUE(b.ok());
  EXPECT_GE(rig.mm->stats().hits, 1u);
}

TEST(MemoryManagerTest, DeviceArenaSharedWithOthersEvictsOrSaysWhy) {
  constexpr uint64_t kP = 64 * 1024;
  auto device = CreateSimDevice({.capacity_bytes = 4 * kP});
  ASSERT_TRUE(device.ok());
  // Someone else (activations) holds 3 of the arena's 4 pages.
  auto other = (*device)->alloc(3 * kP);
  ASSERT_TRUE(other.ok());
  MemoryManagerOptions o;
  o.page_bytes = kP;
  o.num_pages = 4;
  o.budgets.device_bytes = 4 * kP;
  o.budgets.host_bytes = 4 * kP;
  o.device = device->get();
  auto mm = MemoryManager::Create(o);
  ASSERT_TRUE(mm.ok());
  {
    auto a = (*mm)->acquire_sync(0, Tier::kDevice, Access::kRead);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
  }
  {
    // The arena has no room for a second frame: page 0's clean copy is evicted for it.
    auto b = (*mm)->acquire_sync(1, Tier::kDevice, Access::kRead);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_FALSE((*mm)->residency(0).valid[0]);
  }
  (*device)->free(*other);
  ASSERT_TRUE((*mm)->evict_all(Tier::kDevice).ok());
  EXPECT_EQ((*device)->stats().current_bytes, kP);  // one cached frame
  EXPECT_EQ((*mm)->trim_device(), kP);
  EXPECT_EQ((*device)->stats().current_bytes, 0u);
  auto again = (*mm)->acquire_sync(1, Tier::kDevice, Access::kRead);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

// Under LRU the oldest copy goes first, unless a newer one was demoted: it goes before it.
TEST(MemoryManagerTest, DemotedCopyIsEvictedBeforeOlderOnes) {
  RigConfig c;
  c.host_pages = 3;
  c.policy = EvictionPolicy::kLru;
  c.write_back_batch_pages = 1;
  Rig rig = MakeRig(c);
  for (PageId p = 0; p < 3; ++p) {
    auto w = rig.mm->acquire_sync(p, Tier::kHost, Access::kOverwrite);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
  }
  ASSERT_TRUE(rig.mm->demote(2, Tier::kHost).ok());  // the newest
  auto next = rig.mm->acquire_sync(3, Tier::kHost, Access::kOverwrite);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE(rig.mm->residency(0).valid[1]) << "the oldest copy was evicted, not the demoted one";
  EXPECT_TRUE(rig.mm->residency(1).valid[1]);
  EXPECT_FALSE(rig.mm->residency(2).valid[1]);
  EXPECT_TRUE(rig.mm->residency(2).valid[2]) << "its contents went to NVMe first";
  EXPECT_EQ(rig.mm->demote(99, Tier::kHost).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rig.mm->demote(0, Tier::kNvme).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::memory
