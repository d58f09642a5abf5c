#include "storage/page_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "core/util/option.h"
#include "tests/common/expect_fault.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using testing::FillPage;
using testing::MustAllocate;
using testing::PageMatches;
using testing::ScratchDir;

constexpr uint64_t kPage = 64 * kKiB;

class PageStoreTest : public ::testing::Test {
 protected:
  PageStoreOptions options(std::vector<std::string> dirs, uint64_t slots = 32) {
    PageStoreOptions o;
    o.dirs = std::move(dirs);
    o.page_bytes = kPage;
    o.capacity_bytes = slots * kPage;
    o.io.queue_depth = 8;
    o.io.request_bytes = 32 * kKiB;
    return o;
  }
  std::unique_ptr<PageStore> open(const PageStoreOptions& o) {
    Result<std::unique_ptr<PageStore>> store = PageStore::Open(o);
    if (!store.ok()) {
      ADD_FAILURE() << store.status().to_string();
      return nullptr;
    }
    return std::move(store).value();
  }
  // Writes and commits `version` of each page in `pages` (full pages).
  Status commit_pages(PageStore& store, const std::vector<PageId>& pages, uint64_t version) {
    std::vector<AlignedBuffer> buffers;
    PageStore::Batch batch = store.new_batch();
    for (PageId p : pages) {
      buffers.push_back(MustAllocate(kPage));
      FillPage(buffers.back().data(), kPage, p, version);
      STRATA_RETURN_IF_ERROR(
          store.write_page_version(batch, p, version, buffers.back().data(), kPage));
    }
    return store.commit(batch);
  }
  void expect_page(PageStore& store, PageId page, uint64_t version) {
    AlignedBuffer buf = MustAllocate(kPage);
    Status s = store.read_page(page, buf.data(), buf.size()).get();
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(store.lookup(page)->version, version);
    EXPECT_TRUE(PageMatches(buf.data(), kPage, page, version)) << "page " << page;
  }
  void expect_slots_balanced(PageStore& store) {
    PageStoreStats s = store.stats();
    EXPECT_EQ(s.slots_referenced + s.slots_free + s.slots_staged, s.slots_total);
  }

  ScratchDir dir_;
};

TEST_F(PageStoreTest, CommitThenReadBackAcrossReopen) {
  PageStoreOptions o = options({dir_.path()});
  {
    auto store = open(o);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(commit_pages(*store, {1, 2, 3}, 1).ok());
    ASSERT_TRUE(commit_pages(*store, {2}, 5).ok());
    expect_page(*store, 1, 1);
    expect_page(*store, 2, 5);
    PageStoreStats s = store->stats();
    EXPECT_EQ(s.pages, 3u);
    EXPECT_EQ(s.slots_referenced, 3u);
    EXPECT_EQ(s.slots_free, 29u);
    EXPECT_EQ(s.slots_used_peak, 4u);
    EXPECT_EQ(s.commits, 2u);
    EXPECT_EQ(s.bytes_written, 4 * kPage);
  }
  auto store = open(o);
  ASSERT_NE(store, nullptr);
  expect_page(*store, 1, 1);
  expect_page(*store, 2, 5);
  expect_page(*store, 3, 1);
  EXPECT_EQ(store->stats().slots_free, 29u);
}

TEST_F(PageStoreTest, PartialPageLengthIsKept) {
  auto store = open(options({dir_.path()}));
  ASSERT_NE(store, nullptr);
  AlignedBuffer buf = MustAllocate(kPage);
  FillPage(buf.data(), 5000, 9, 1);
  PageStore::Batch batch = store->new_batch();
  ASSERT_TRUE(store->write_page_version(batch, 9, 1, buf.data(), 5000).ok());
  ASSERT_TRUE(store->commit(batch).ok());
  AlignedBuffer in = MustAllocate(8 * kKiB);
  ASSERT_TRUE(store->read_page(9, in.data(), in.size()).get().ok());
  EXPECT_TRUE(PageMatches(in.data(), 5000, 9, 1));
  EXPECT_EQ(store->lookup(9)->length, 5000u);
  AlignedBuffer tiny = MustAllocate(4 * kKiB);
  EXPECT_EQ(store->read_page(9, tiny.data(), tiny.size()).get().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(PageStoreTest, UncommittedVersionsAreFreedAndInvisible) {
  PageStoreOptions o = options({dir_.path()});
  {
    auto store = open(o);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(commit_pages(*store, {1}, 1).ok());
    AlignedBuffer buf = MustAllocate(kPage);
    FillPage(buf.data(), kPage, 1, 2);
    PageStore::Batch batch = store->new_batch();
    ASSERT_TRUE(store->write_page_version(batch, 1, 2, buf.data(), kPage).ok());
    EXPECT_EQ(store->stats().slots_staged, 1u);
    expect_page(*store, 1, 1);
  }  // batch abandoned, then store closed
  auto store = open(o);
  ASSERT_NE(store, nullptr);
  expect_page(*store, 1, 1);
  EXPECT_EQ(store->stats().slots_free, 31u);
}

TEST_F(PageStoreTest, VersionsMustIncreaseAndPagesAppearOncePerBatch) {
  auto store = open(options({dir_.path()}));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(commit_pages(*store, {4}, 3).ok());
  Status old = commit_pages(*store, {4}, 3);
  EXPECT_EQ(old.code(), StatusCode::kInvalidArgument) << old.to_string();
  EXPECT_NE(old.message().find("not newer"), std::string::npos);
  Status twice = commit_pages(*store, {5, 5}, 1);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(store->lookup(5).ok());
  expect_slots_balanced(*store);
  EXPECT_EQ(store->read_page(77, nullptr, 0, [](const Status&, const PageEntry&) {}).code(),
            StatusCode::kNotFound);
}

TEST_F(PageStoreTest, FullStoreIsResourceExhaustedAndRecovers) {
  auto store = open(options({dir_.path()}, 4));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(commit_pages(*store, {1, 2}, 1).ok());
  Status full = commit_pages(*store, {1, 2, 3}, 2);  // needs 3 free slots, 2 are free
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.to_string();
  EXPECT_NE(full.message().find("full"), std::string::npos);
  test_support::ExpectFault(full, Option::kNvmeMem, {{"slots", 4}});
  expect_page(*store, 1, 1);
  expect_page(*store, 2, 1);
  expect_slots_balanced(*store);
  EXPECT_TRUE(commit_pages(*store, {1, 2}, 2).ok());
  expect_page(*store, 2, 2);
}

TEST_F(PageStoreTest, PagesStripeAcrossDirectories) {
  PageStoreOptions o = options({dir_.sub("a"), dir_.sub("b")}, 16);
  auto store = open(o);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(commit_pages(*store, {0, 1, 2, 3, 4, 5}, 1).ok());
  std::set<uint32_t> files;
  for (const PageRecord& r : store->pages()) files.insert(r.entry.file);
  EXPECT_EQ(files.size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/a/strata.slots"));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/b/strata.slots"));
  EXPECT_EQ(store->stats().slots_total, 16u);
  store.reset();
  o.dirs = {dir_.path() + "/b", dir_.path() + "/a"};
  Result<std::unique_ptr<PageStore>> swapped = PageStore::Open(o);
  // b holds no catalog, so this would be a new store; it must not be created over a's files.
  ASSERT_FALSE(swapped.ok());
  EXPECT_EQ(swapped.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(swapped.status().message().find("already holds a Strata store"), std::string::npos)
      << swapped.status().message();
  test_support::ExpectFault(swapped.status(), Option::kNvmeDir);
  o.dirs = {dir_.path() + "/a", dir_.path() + "/b"};
  store = open(o);
  ASSERT_NE(store, nullptr);
  for (PageId p = 0; p < 6; ++p) expect_page(*store, p, 1);
}

TEST_F(PageStoreTest, ManifestsPinVersionsUntilDeleted) {
  auto store = open(options({dir_.path()}, 8));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(commit_pages(*store, {1, 2}, 1).ok());
  ASSERT_TRUE(store->save_manifest("step-1").ok());
  EXPECT_EQ(store->save_manifest("step-1").code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(commit_pages(*store, {1, 2}, 2).ok());
  EXPECT_EQ(store->stats().slots_referenced, 4u) << "step-1 keeps the old versions";

  Result<std::vector<PageRecord>> m = store->load_manifest("step-1");
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->size(), 2u);
  AlignedBuffer buf = MustAllocate(kPage);
  std::promise<Status> done;
  ASSERT_TRUE(store
                  ->read_record((*m)[0], buf.data(), buf.size(),
                                [&](const Status& s, const PageEntry&) { done.set_value(s); })
                  .ok());
  ASSERT_TRUE(done.get_future().get().ok());
  EXPECT_TRUE(PageMatches(buf.data(), kPage, (*m)[0].page, 1));

  ASSERT_TRUE(store->restore_manifest("step-1").ok());
  expect_page(*store, 1, 1);
  expect_page(*store, 2, 1);
  EXPECT_EQ(store->stats().slots_referenced, 2u);
  ASSERT_TRUE(commit_pages(*store, {1}, 3).ok());
  ASSERT_TRUE(store->delete_manifest("step-1").ok());
  EXPECT_EQ(store->stats().slots_referenced, 2u);
  EXPECT_EQ(store->stats().slots_free, 6u);
  EXPECT_EQ(store->delete_manifest("step-1").code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->manifest_names().ok());
  EXPECT_TRUE(store->manifest_names()->empty());
}

TEST_F(PageStoreTest, ManifestsSurviveReopen) {
  PageStoreOptions o = options({dir_.path()}, 8);
  {
    auto store = open(o);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(commit_pages(*store, {1}, 1).ok());
    ASSERT_TRUE(store->save_manifest("ckpt").ok());
    ASSERT_TRUE(commit_pages(*store, {1}, 2).ok());
  }
  auto store = open(o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->stats().slots_referenced, 2u);
  EXPECT_EQ(store->stats().slots_free, 6u);
  ASSERT_TRUE(store->restore_manifest("ckpt").ok());
  expect_page(*store, 1, 1);
}

}  // namespace
}  // namespace strata::storage
