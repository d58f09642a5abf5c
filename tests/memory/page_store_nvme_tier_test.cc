// The memory manager over the real NVMe tier: storage::PageStore through PageStoreNvmeTier, in a
// scratch directory on the build disk.
#include "memory/page_store_nvme_tier.h"

#include <gtest/gtest.h>

#include "tests/memory/memory_test_util.h"

namespace strata::memory {
namespace {

using testing::CheckPattern;
using testing::FillPattern;

constexpr uint64_t kPage = 64 * 1024;
constexpr uint64_t kPages = 12;

std::unique_ptr<MemoryManager> MustCreate(NvmeTier* tier) {
  MemoryManagerOptions o;
  o.page_bytes = kPage;
  o.num_pages = kPages;
  o.host_bytes = 3 * kPage;
  o.nvme = tier;
  auto mm = MemoryManager::Create(o);
  STRATA_CHECK(mm.ok()) << mm.status().to_string();
  return std::move(mm).value();
}

TEST(PageStoreNvmeTierTest, PagesSurviveFlushCommitEvictionAndReopen) {
  testing::ScratchDir dir;
  {
    auto store = testing::OpenStore(dir.path(), kPage, 64);
    PageStoreNvmeTier tier(store.get());
    auto mm = MustCreate(&tier);
    // Twelve pages written through three host frames: most reach NVMe by eviction.
    for (PageId p = 0; p < kPages; ++p) {
      auto ref = mm->acquire_sync(p, Access::kOverwrite);
      ASSERT_TRUE(ref.ok()) << ref.status().to_string();
      FillPattern(ref->data(), kPage, p, 40 + p);
    }
    ASSERT_TRUE(mm->flush_all().ok());
    ASSERT_TRUE(mm->commit_nvme().ok());
    EXPECT_EQ(store->stats().pages, kPages);
    ASSERT_TRUE(mm->evict_all().ok());
    for (PageId p = 0; p < kPages; ++p) {
      auto ref = mm->acquire_sync(p, Access::kRead);
      ASSERT_TRUE(ref.ok()) << ref.status().to_string();
      EXPECT_EQ(CheckPattern(ref->data(), kPage, p, 40 + p), -1) << "page " << p;
    }
    // Rewrite page 0 and commit again: a second version.
    {
      auto ref = mm->acquire_sync(0, Access::kWrite);
      ASSERT_TRUE(ref.ok());
      FillPattern(ref->data(), kPage, 0, 99);
    }
    ASSERT_TRUE(mm->flush_all().ok());
    ASSERT_TRUE(mm->commit_nvme().ok());
    EXPECT_EQ(store->lookup(0)->version, 2u);
    // Page 1 is rewritten but never committed: a reopen sees its committed version.
    {
      auto ref = mm->acquire_sync(1, Access::kWrite);
      ASSERT_TRUE(ref.ok());
      FillPattern(ref->data(), kPage, 1, 77);
    }
    ASSERT_TRUE(mm->flush_all().ok());
  }
  // What a resumed run sees: reopen the store and read through a new manager.
  auto store = testing::OpenStore(dir.path(), kPage, 64);
  PageStoreNvmeTier tier(store.get());
  auto mm = MustCreate(&tier);
  for (PageId p = 0; p < kPages; ++p) {
    EXPECT_TRUE(mm->residency(p).valid[2]) << "page " << p << " is known to be on NVMe";
    auto ref = mm->acquire_sync(p, Access::kRead);
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    const uint64_t tag = p == 0 ? 99 : 40 + p;
    EXPECT_EQ(CheckPattern(ref->data(), kPage, p, tag), -1) << "page " << p;
  }
}

// A staged write reads its buffer (a frame of the manager's host pool) until it completes: the
// manager's destructor waits for such writes and drops the uncommitted versions, so nothing is
// left staged in the store, and nothing was committed.
TEST(PageStoreNvmeTierTest, ManagerShutdownDropsStagedVersions) {
  testing::ScratchDir dir;
  auto store = testing::OpenStore(dir.path(), kPage, 64);
  PageStoreNvmeTier tier(store.get());
  {
    auto mm = MustCreate(&tier);
    for (PageId p = 0; p < 3; ++p) {
      auto ref = mm->acquire_sync(p, Access::kOverwrite);
      ASSERT_TRUE(ref.ok()) << ref.status().to_string();
      FillPattern(ref->data(), kPage, p, 5);
    }
    ASSERT_TRUE(mm->flush_all().ok());
    EXPECT_LT(store->stats().slots_free, store->stats().slots_total) << "versions are staged";
  }
  EXPECT_EQ(store->stats().slots_free, store->stats().slots_total);
  EXPECT_TRUE(tier.committed_pages().empty());
}

}  // namespace
}  // namespace strata::memory
