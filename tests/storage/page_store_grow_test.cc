// Note [Growing a store] (storage/page_store_open.cc): reopening with a larger capacity grows
// every slot file and keeps every page; a smaller capacity never shrinks the store. Issue 12,
// finding 1: --nvme-mem on --resume used to be ignored, so a full store could not be grown.
#include <gtest/gtest.h>

#include "storage/page_store.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using testing::FillPage;
using testing::MustAllocate;
using testing::PageMatches;
using testing::ScratchDir;

constexpr uint64_t kPage = 64 * kKiB;

PageStoreOptions Options(const ScratchDir& dir, uint64_t pages) {
  PageStoreOptions o;
  o.dirs = {dir.sub("a"), dir.sub("b")};
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
    auto store = PageStore::Open(Options(dir, 4));
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    WritePages(**store, 0, 3, 1);
    AlignedBuffer buf = MustAllocate(kPage);
    PageStore::Batch batch = (*store)->new_batch();
    FillPage(buf.data(), kPage, 3, 1);
    ASSERT_TRUE((*store)->write_page_version(batch, 3, 1, buf.data(), kPage).ok());
    PageStore::Batch full = (*store)->new_batch();
    Status none = (*store)->write_page_version(full, 4, 1, buf.data(), kPage);
    EXPECT_EQ(none.code(), StatusCode::kResourceExhausted) << none.to_string();
    EXPECT_NE(none.message().find("--nvme-mem"), std::string::npos) << none.message();
  }
  auto grown = PageStore::Open(Options(dir, 12));
  ASSERT_TRUE(grown.ok()) << grown.status().to_string();
  EXPECT_EQ((*grown)->stats().slots_total, 12u);
  WritePages(**grown, 3, 8, 2);  // more pages than the old store had slots
  AlignedBuffer buf = MustAllocate(kPage);
  for (uint64_t p = 0; p < 11; ++p) {
    ASSERT_TRUE((*grown)->read_page(p, buf.data(), kPage).get().ok()) << "page " << p;
    EXPECT_TRUE(PageMatches(buf.data(), kPage, p, p < 3 ? 1 : 2)) << "page " << p;
  }
  grown->reset();
  auto again = PageStore::Open(Options(dir, 2));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->stats().slots_total, 12u) << "a store never shrinks";
}

}  // namespace
}  // namespace strata::storage
