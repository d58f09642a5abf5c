// Note [Growing a store] (storage/page_store_open.cc): reopening with a larger capacity grows
// every slot file and keeps every page; a smaller capacity never shrinks the store. Issue 12,
// finding 1: --nvme-mem on --resume used to be ignored, so a full store could not be grown.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/util/option.h"
#include "storage/page_store.h"
#include "tests/common/expect_fault.h"
#include "tests/common/loop_mount.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using test_support::LoopMount;
using testing::FillPage;
using testing::MustAllocate;
using testing::PageMatches;
using testing::ScratchDir;

constexpr uint64_t kPage = 64 * kKiB;

PageStoreOptions Options(const std::string& root, uint64_t pages) {
  PageStoreOptions o;
  o.dirs = {root + "/a", root + "/b"};
  std::filesystem::create_directories(o.dirs[0]);
  std::filesystem::create_directories(o.dirs[1]);
  o.page_bytes = kPage;
  o.capacity_bytes = pages * kPage;
  return o;
}

void WritePages(PageStore& store, uint64_t first, uint64_t count, uint64_t version) {
  AlignedBuffer buf = MustAllocate(kPage);
  PageStore::Batch batch = store.new_batch();
  for (uint64_t p = first; p < first + count; ++p) {
    FillPage(buf.data(), kPage, p, version);
    ASSERT_TRUE(store.write_page_version(batch, p, version, buf.data(), kPage).ok());
    ASSERT_TRUE(store.commit(batch).ok());
  }
}

TEST(PageStoreGrow, AReopenWithMoreCapacityGrowsTheStoreAndKeepsItsPages) {
  ScratchDir dir;
  {
    auto store = PageStore::Open(Options(dir.path(), 4));
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    WritePages(**store, 0, 3, 1);
    AlignedBuffer buf = MustAllocate(kPage);
    PageStore::Batch batch = (*store)->new_batch();
    FillPage(buf.data(), kPage, 3, 1);
    ASSERT_TRUE((*store)->write_page_version(batch, 3, 1, buf.data(), kPage).ok());
    PageStore::Batch full = (*store)->new_batch();
    Status none = (*store)->write_page_version(full, 4, 1, buf.data(), kPage);
    EXPECT_EQ(none.code(), StatusCode::kResourceExhausted) << none.to_string();
    EXPECT_NE(none.message().find("{nvme_mem}"), std::string::npos) << none.message();
  }
  auto grown = PageStore::Open(Options(dir.path(), 12));
  ASSERT_TRUE(grown.ok()) << grown.status().to_string();
  EXPECT_EQ((*grown)->stats().slots_total, 12u);
  WritePages(**grown, 3, 8, 2);  // more pages than the old store had slots
  AlignedBuffer buf = MustAllocate(kPage);
  for (uint64_t p = 0; p < 11; ++p) {
    ASSERT_TRUE((*grown)->read_page(p, buf.data(), kPage).get().ok()) << "page " << p;
    EXPECT_TRUE(PageMatches(buf.data(), kPage, p, p < 3 ? 1 : 2)) << "page " << p;
  }
  grown->reset();
  auto again = PageStore::Open(Options(dir.path(), 2));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->stats().slots_total, 12u) << "a store never shrinks";
}

void ExpectNoSpace(const Status& s, const std::string& dir, const std::string& what) {
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("{nvme_dir} " + dir + ": No space left on device (ENOSPC): " + what),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(" are free; "), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  if (!test_support::ExpectFault(s, Option::kNvmeMem)) return;
  const OptionFault* fault = DetailOf<OptionFault>(s);
  // Both numbers the message states (an injected ENOSPC has the room it claims to lack).
  EXPECT_TRUE(fault->number("need_bytes").has_value());
  EXPECT_TRUE(fault->number("free_bytes").has_value());
}

// Issue 29, item 13: a growth that fallocate itself cannot fit (the disk filled after the check)
// is worded as every other shortfall, and the store keeps its slots and pages.
TEST(PageStoreGrow, FallocatesOwnENOSPCIsWordedAsEveryShortfall) {
  ScratchDir dir;
  {
    auto store = PageStore::Open(Options(dir.path(), 4));
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    WritePages(**store, 0, 3, 1);
  }
  FaultInjector faults;
  faults.refuse_fallocate(true);
  PageStoreOptions o = Options(dir.path(), 12);
  o.faults = &faults;
  auto refused = PageStore::Open(o);
  ASSERT_FALSE(refused.ok());
  ExpectNoSpace(refused.status(), dir.path() + "/a",
                "growing the store's slot file to 6 slots of 64.00 KiB needs 256.00 KiB");
  test_support::ExpectFault(refused.status(), Option::kNvmeMem, {{"need_bytes", 256 * 1024}});
  auto again = PageStore::Open(Options(dir.path(), 4));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->stats().slots_total, 4u);
  AlignedBuffer buf = MustAllocate(kPage);
  for (uint64_t p = 0; p < 3; ++p) {
    ASSERT_TRUE((*again)->read_page(p, buf.data(), kPage).get().ok()) << "page " << p;
    EXPECT_TRUE(PageMatches(buf.data(), kPage, p, 1)) << "page " << p;
  }
}

// Two --nvme-dir on one filesystem need the sum of their growth: each half fits the disk alone,
// both do not. Checked before either file grows (it used to check each alone, grow the first
// and fail on the second). On a small loop-mounted ext4 (needs root, else skipped).
TEST(PageStoreGrow, DirectoriesOnOneDiskNeedTheSumOfTheirGrowth) {
  ScratchDir dir("grow");
  LoopMount disk(dir.path(), 48 << 20);
  if (!disk.ok()) GTEST_SKIP() << "no loop-mounted ext4 here: " << disk.why();
  { ASSERT_TRUE(PageStore::Open(Options(disk.path(), 4)).ok()); }
  const uint64_t slot_bytes_before = std::filesystem::file_size(disk.path() + "/a/strata.slots");
  const uint64_t pages = disk.free_bytes() / kPage / 2 * 3;  // 3/4 of the free space per dir
  auto refused = PageStore::Open(Options(disk.path(), pages));
  ASSERT_FALSE(refused.ok());
  ExpectNoSpace(refused.status(), disk.path() + "/b", "growing the store to ");
  EXPECT_NE(refused.status().message().find("in each of the 2 {nvme_dir} on this filesystem"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(std::filesystem::file_size(disk.path() + "/a/strata.slots"), slot_bytes_before)
      << "the first slot file grew before the second was refused";
}

}  // namespace
}  // namespace strata::storage
