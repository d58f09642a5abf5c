// Injected faults and on-disk corruption: every fault surfaces as a Status with context, the
// last committed state stays intact and readable, and corruption is always detected.
#include <gtest/gtest.h>

#include <random>

#include "storage/page_store.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using testing::FillPage;
using testing::MustAllocate;
using testing::PageMatches;
using testing::ScratchDir;

constexpr uint64_t kPage = 64 * kKiB;
constexpr int kPages = 6;

class PageStoreFaults : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    PageStoreOptions o;
    o.dirs = {dir_.sub("a"), dir_.sub("b")};
    o.page_bytes = kPage;
    o.capacity_bytes = 32 * kPage;
    o.io.backend = GetParam();
    o.io.queue_depth = 4;
    o.io.request_bytes = 16 * kKiB;  // four requests per page
    o.faults = &faults_;
    Result<std::unique_ptr<PageStore>> store = PageStore::Open(o);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(store).value();
    ASSERT_TRUE(commit_all(1).ok());
  }

  Status commit_all(uint64_t version) {
    std::vector<AlignedBuffer> buffers;
    PageStore::Batch batch = store_->new_batch();
    for (PageId p = 0; p < kPages; ++p) {
      buffers.push_back(MustAllocate(kPage));
      FillPage(buffers.back().data(), kPage, p, version);
      STRATA_RETURN_IF_ERROR(
          store_->write_page_version(batch, p, version, buffers.back().data(), kPage));
    }
    return store_->commit(batch);
  }

  // Every page reads back checksum-valid as `version`, and no slot leaked.
  void expect_state(uint64_t version) {
    AlignedBuffer buf = MustAllocate(kPage);
    for (PageId p = 0; p < kPages; ++p) {
      Status s = store_->read_page(p, buf.data(), buf.size()).get();
      ASSERT_TRUE(s.ok()) << s.to_string();
      EXPECT_TRUE(PageMatches(buf.data(), kPage, p, version)) << "page " << p;
    }
    PageStoreStats st = store_->stats();
    EXPECT_EQ(st.slots_staged, 0u);
    EXPECT_EQ(st.slots_referenced, static_cast<uint64_t>(kPages));
    EXPECT_EQ(st.slots_referenced + st.slots_free, st.slots_total);
  }

  ScratchDir dir_;
  FaultInjector faults_;
  std::unique_ptr<PageStore> store_;
};

TEST_P(PageStoreFaults, EioOnAnyWriteRequestFailsTheCommit) {
  for (uint64_t n = 1; n <= kPages * 4; n += 5) {
    faults_.fail_nth_request(n);
    Status s = commit_all(2);
    ASSERT_EQ(s.code(), StatusCode::kIoError) << "request " << n << ": " << s.to_string();
    EXPECT_NE(s.message().find("commit of 6 page versions"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("strata.slots offset 0x"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("Input/output error"), std::string::npos) << s.message();
    expect_state(1);
  }
  ASSERT_TRUE(commit_all(2).ok());
  expect_state(2);
}

TEST_P(PageStoreFaults, EnospcMidBatchFailsTheCommit) {
  faults_.enospc_after_bytes(3 * kPage + 16 * kKiB);
  Status s = commit_all(2);
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("page "), std::string::npos) << s.message();
  expect_state(1);
  faults_.clear();
  ASSERT_TRUE(commit_all(2).ok());
  expect_state(2);
}

TEST_P(PageStoreFaults, EioOnReadNamesPageAndFile) {
  faults_.fail_nth_request(2);
  AlignedBuffer buf = MustAllocate(kPage);
  Status s = store_->read_page(4, buf.data(), buf.size()).get();
  ASSERT_EQ(s.code(), StatusCode::kIoError) << s.to_string();
  EXPECT_NE(s.message().find("read of page 4 version 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(store_->slot_path(store_->lookup(4)->file)), std::string::npos);
  expect_state(1);
}

TEST_P(PageStoreFaults, LatencyDelaysButLosesNothing) {
  faults_.set_latency_ns(2'000'000);
  ASSERT_TRUE(commit_all(2).ok());
  faults_.clear();
  expect_state(2);
}

TEST_P(PageStoreFaults, EveryFlippedByteIsDetected) {
  std::mt19937_64 rng(42);
  AlignedBuffer buf = MustAllocate(kPage);
  for (int trial = 0; trial < 24; ++trial) {
    const PageId page = rng() % kPages;
    const PageEntry e = *store_->lookup(page);
    const uint64_t within = trial == 0 ? 0 : trial == 1 ? kPage - 1 : rng() % kPage;
    const uint64_t offset = store_->slot_offset(e) + within;
    const uint8_t mask = static_cast<uint8_t>(1u << (rng() % 8));
    ASSERT_TRUE(FlipByteOnDisk(store_->slot_path(e.file), offset, mask).ok());
    Status s = store_->read_page(page, buf.data(), buf.size()).get();
    ASSERT_EQ(s.code(), StatusCode::kCorruption) << "trial " << trial << ": " << s.to_string();
    EXPECT_NE(s.message().find("page " + std::to_string(page)), std::string::npos);
    EXPECT_NE(s.message().find(store_->slot_path(e.file)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(HexOffset(store_->slot_offset(e))), std::string::npos)
        << s.message();
    ASSERT_TRUE(FlipByteOnDisk(store_->slot_path(e.file), offset, mask).ok());  // heal
    ASSERT_TRUE(store_->read_page(page, buf.data(), buf.size()).get().ok());
  }
  EXPECT_EQ(store_->stats().checksum_failures, 24u);
}

INSTANTIATE_TEST_SUITE_P(Backends, PageStoreFaults,
                         ::testing::Values(IoBackend::kUring, IoBackend::kSync),
                         [](const auto& info) { return std::string(IoBackendName(info.param)); });

}  // namespace
}  // namespace strata::storage
