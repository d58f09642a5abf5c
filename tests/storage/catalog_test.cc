// storage/catalog.h: a catalog whose write fails on a full disk is poisoned (Note [Poisoned
// catalog]): one ENOSPC error, the same error from every later call, its RocksDB handle closed
// at once (so that nothing of RocksDB can abort the process later), and what was committed
// before it intact. The disk is a small loop-mounted ext4 (needs root, else the tests skip).
#include "storage/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/common/loop_mount.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using test_support::LoopMount;
using testing::ScratchDir;

std::vector<PageRecord> Records(PageId first, size_t n) {
  std::vector<PageRecord> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back({first + i, PageEntry{0, i, 7, 0xabcdef00 + i, 4096}});
  }
  return out;
}

size_t CountPages(const Catalog& catalog) {
  size_t n = 0;
  EXPECT_TRUE(catalog.for_each_page([&](const PageRecord&) { ++n; }).ok());
  return n;
}

class CatalogPoisoned : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!disk_.ok()) GTEST_SKIP() << "no loop-mounted ext4 here: " << disk_.why();
    path_ = Catalog::PathFor(disk_.path());
    Result<std::unique_ptr<Catalog>> opened = Catalog::Open(path_, /*create=*/true);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    catalog_ = std::move(opened).value();
    ASSERT_TRUE(catalog_->write_layout(StoreLayout{kCatalogFormatVersion, 4096, 64, {"d"}}).ok());
    ASSERT_TRUE(catalog_->commit(Records(0, 10), {}).ok());
    ASSERT_TRUE(catalog_->put_manifest("step-1", Records(0, 10)).ok());
  }

  // A commit large enough to need new blocks for the write-ahead log, on a disk with none.
  Status FailOnAFullDisk() {
    if (!disk_.fill_leaving(0)) ADD_FAILURE() << "the loop mount kept free space";
    return catalog_->commit(Records(1000, 20000), {});
  }

  ScratchDir dir_{"catalog"};
  LoopMount disk_{dir_.path(), 16 << 20};
  std::string path_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogPoisoned, AFullDiskFailsTheWriteWithENOSPCsWordsInOneLine) {
  const Status failed = FailOnAFullDisk();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << failed.to_string();
  EXPECT_NE(failed.message().find("No space left on device (ENOSPC)"), std::string::npos)
      << failed.message();
  EXPECT_NE(failed.message().find(path_), std::string::npos) << failed.message();
  EXPECT_EQ(failed.message().find('\n'), std::string::npos) << failed.message();
  EXPECT_EQ(catalog_->poisoned(), failed);
}

TEST_F(CatalogPoisoned, EveryLaterCallReturnsTheFirstError) {
  const Status failed = FailOnAFullDisk();
  ASSERT_FALSE(failed.ok());
  disk_.unfill();  // with space again, RocksDB would accept these: the catalog must not
  EXPECT_EQ(catalog_->commit(Records(0, 1), {}), failed);
  EXPECT_EQ(catalog_->put_manifest("step-2", Records(0, 1)), failed);
  EXPECT_EQ(catalog_->delete_manifest("step-1"), failed);
  EXPECT_EQ(catalog_->put_meta("store-id", "x"), failed);
  EXPECT_EQ(catalog_->write_layout(StoreLayout{kCatalogFormatVersion, 4096, 64, {"d"}}), failed);
  EXPECT_EQ(catalog_->get_manifest("step-1").status(), failed);
  EXPECT_EQ(catalog_->manifest_names().status(), failed);
  EXPECT_EQ(catalog_->get_meta("store-id").status(), failed);
  EXPECT_EQ(catalog_->read_layout().status(), failed);
  EXPECT_EQ(catalog_->for_each_page([](const PageRecord&) {}), failed);
}

// The handle is closed when the write fails, not when the object goes: RocksDB lets one process
// open a database once, so a second open while the poisoned catalog lives proves it. The
// reopened catalog holds every earlier commit and checkpoint, and nothing of the failed batch.
TEST_F(CatalogPoisoned, TheHandleIsClosedAtOnceAndEarlierCommitsSurvive) {
  ASSERT_FALSE(FailOnAFullDisk().ok());
  disk_.unfill();
  Result<std::unique_ptr<Catalog>> again = Catalog::Open(path_, /*create=*/false);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(CountPages(**again), 10u);
  Result<std::vector<PageRecord>> manifest = (*again)->get_manifest("step-1");
  ASSERT_TRUE(manifest.ok()) << manifest.status().to_string();
  EXPECT_EQ(manifest->size(), 10u);
  EXPECT_TRUE((*again)->commit(Records(10, 5), {}).ok());
  EXPECT_EQ(CountPages(**again), 15u);
  catalog_.reset();  // destroying the poisoned catalog touches nothing (and does not abort)
  EXPECT_EQ(CountPages(**again), 15u);
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// RocksDB's own log goes to the "storage" logger, not to a LOG file in the catalog: on a full
// disk that file was the one whose next line aborted the process. So inspecting a store
// (ReadLayout) writes nothing either, not even a rotated log.
TEST(Catalog, RocksDbWritesNoLogFileAndReadLayoutWritesNothing) {
  ScratchDir dir("catalog");
  const std::string path = Catalog::PathFor(dir.path());
  {
    Result<std::unique_ptr<Catalog>> catalog = Catalog::Open(path, /*create=*/true);
    ASSERT_TRUE(catalog.ok()) << catalog.status().to_string();
    ASSERT_TRUE((*catalog)->write_layout(StoreLayout{kCatalogFormatVersion, 4096, 8, {"d"}}).ok());
  }
  const std::vector<std::string> before = Entries(path);
  for (const std::string& name : before) EXPECT_NE(name.rfind("LOG", 0), 0u) << name;
  ASSERT_TRUE(Catalog::ReadLayout(path).ok());
  EXPECT_EQ(Entries(path), before);
}

}  // namespace
}  // namespace strata::storage
