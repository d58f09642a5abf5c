// Many threads writing, committing and reading distinct pages of one PageStore at full queue
// depth (run under ThreadSanitizer by the sanitize label: names contain "Concurrent").
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

#include "storage/page_store.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using testing::FillPage;
using testing::MustAllocate;
using testing::PageMatches;
using testing::ScratchDir;

constexpr uint64_t kPage = 32 * kKiB;
constexpr int kThreads = 6;
constexpr int kPagesPerThread = 8;
constexpr int kRounds = 6;

class PageStoreConcurrent : public ::testing::TestWithParam<IoBackend> {};

TEST_P(PageStoreConcurrent, ConcurrentWritersCommittersAndReaders) {
  ScratchDir dir;
  FaultInjector no_faults;
  PageStoreOptions o;
  o.dirs = {dir.sub("a"), dir.sub("b")};
  o.page_bytes = kPage;
  // Every thread's pages, twice (old + new version), plus one manifest's worth.
  o.capacity_bytes = 3 * kThreads * kPagesPerThread * kPage + 8 * kPage;
  o.io.backend = GetParam();
  o.io.queue_depth = 8;
  o.io.request_bytes = 8 * kKiB;  // four requests per page: the queue stays full
  o.faults = &no_faults;
  Result<std::unique_ptr<PageStore>> opened = PageStore::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  PageStore& store = **opened;

  std::atomic<int> errors{0};
  std::latch start(kThreads + 1);
  std::latch written_once(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      AlignedBuffer out = MustAllocate(kPagesPerThread * kPage);
      AlignedBuffer in = MustAllocate(kPagesPerThread * kPage);
      if (!store.engine().register_buffer(out.data(), out.size()).ok()) ++errors;
      start.arrive_and_wait();
      for (uint64_t round = 1; round <= kRounds; ++round) {
        PageStore::Batch batch = store.new_batch();
        for (int i = 0; i < kPagesPerThread; ++i) {
          const PageId page = t * kPagesPerThread + i;
          char* buf = out.data() + i * kPage;
          FillPage(buf, kPage, page, round);
          if (!store.write_page_version(batch, page, round, buf, kPage).ok()) ++errors;
        }
        Status s = store.commit(batch);
        if (!s.ok()) {
          ADD_FAILURE() << s.to_string();
          ++errors;
        }
        if (round == 1) written_once.count_down();
        std::vector<std::future<Status>> reads;
        for (int i = 0; i < kPagesPerThread; ++i) {
          reads.push_back(store.read_page(t * kPagesPerThread + i, in.data() + i * kPage, kPage));
        }
        for (int i = 0; i < kPagesPerThread; ++i) {
          if (!reads[i].get().ok()) ++errors;
          if (!PageMatches(in.data() + i * kPage, kPage, t * kPagesPerThread + i, round)) {
            ++errors;
          }
        }
      }
      store.engine().unregister_buffer(out.data());
    });
  }
  // Meanwhile: snapshots and stats from another thread, once every thread has committed.
  start.arrive_and_wait();
  written_once.wait();
  ASSERT_TRUE(store.save_manifest("mid").ok());
  PageStoreStats mid = store.stats();
  EXPECT_LE(mid.slots_used_peak, mid.slots_total);
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_TRUE(store.delete_manifest("mid").ok());
  PageStoreStats s = store.stats();
  EXPECT_EQ(s.pages, static_cast<uint64_t>(kThreads * kPagesPerThread));
  EXPECT_EQ(s.slots_referenced, s.pages);
  EXPECT_EQ(s.slots_staged, 0u);
  EXPECT_EQ(s.slots_referenced + s.slots_free, s.slots_total);
  EXPECT_EQ(s.commits, static_cast<uint64_t>(kThreads * kRounds));
}

INSTANTIATE_TEST_SUITE_P(Backends, PageStoreConcurrent,
                         ::testing::Values(IoBackend::kUring, IoBackend::kSync),
                         [](const auto& info) { return std::string(IoBackendName(info.param)); });

}  // namespace
}  // namespace strata::storage
