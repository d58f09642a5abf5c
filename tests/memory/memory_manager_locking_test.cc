// Note [Locking] (memory/memory_manager.cc) as a test: no mutex of the manager is held across
// an NVMe commit. A commit made slow by injected disk latency is in flight while a hit and the
// staging of another page complete. Before 2026-11-25 the manager held its staging
// mutex across the tier's commit (an fdatasync plus a synchronous RocksDB write), so staging
// waited for it. Runs under TSan (`Concurrent` in the suite name).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "memory/memory_manager.h"
#include "memory/page_store_nvme_tier.h"
#include "storage/fault_injector.h"
#include "tests/memory/memory_test_util.h"

namespace strata::memory {
namespace {

using testing::CheckPattern;
using testing::FillPattern;

constexpr uint64_t kPage = 64 * 1024;
// Every disk transfer completes no sooner than this after it was issued while the latency is
// set: far longer than anything the checked operations do, also under TSan.
constexpr uint64_t kSlowWriteNs = 3'000'000'000;

// Forwards to the page store's tier and says when a commit has started.
class SignallingTier final : public NvmeTier {
 public:
  explicit SignallingTier(NvmeTier* inner) : inner_(inner) {}
  uint64_t page_bytes() const override { return inner_->page_bytes(); }
  Status stage_write(PageId page, const void* buffer) override {
    return inner_->stage_write(page, buffer);
  }
  std::unique_ptr<NvmeBatch> seal() override { return inner_->seal(); }
  Status commit(std::unique_ptr<NvmeBatch> batch) override {
    if (!batch->pages().empty() && !signalled_.exchange(true)) started_.set_value();
    return inner_->commit(std::move(batch));
  }
  void drop_staged() override { inner_->drop_staged(); }
  std::future<Status> read(PageId page, void* buffer) override {
    return inner_->read(page, buffer);
  }
  std::vector<PageId> committed_pages() const override { return inner_->committed_pages(); }
  NvmeTierStats stats() const override { return inner_->stats(); }
  std::future<void> started() { return started_.get_future(); }

 private:
  NvmeTier* inner_;
  std::promise<void> started_;
  std::atomic<bool> signalled_{false};
};

void Write(MemoryManager& mm, PageId p, uint64_t tag) {
  auto ref = mm.acquire_sync(p, Access::kOverwrite);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  FillPattern(ref->data(), kPage, p, tag);
}

// A manager of 8 pages over a page store whose disk latency the test sets, through a tier that
// says when a commit has started.
class MemoryManagerLockingConcurrent : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenStore(dir_.path(), kPage, 64, &faults_);
    store_tier_ = std::make_unique<PageStoreNvmeTier>(store_.get());
    tier_ = std::make_unique<SignallingTier>(store_tier_.get());
    auto mm = MemoryManager::Create(
        {.page_bytes = kPage, .num_pages = 8, .host_bytes = 4 * kPage, .nvme = tier_.get()});
    ASSERT_TRUE(mm.ok()) << mm.status().to_string();
    mm_ = std::move(*mm);
  }

  testing::ScratchDir dir_;
  storage::FaultInjector faults_;
  std::unique_ptr<storage::PageStore> store_;
  std::unique_ptr<PageStoreNvmeTier> store_tier_;
  std::unique_ptr<SignallingTier> tier_;
  std::unique_ptr<MemoryManager> mm_;
};

TEST_F(MemoryManagerLockingConcurrent, HitAndStagingProceedDuringASlowCommit) {
  MemoryManager& m = *mm_;
  storage::FaultInjector& faults = faults_;
  SignallingTier& tier = *tier_;
  // Page 0 on NVMe and read back into the pool (the hit); page 2 dirty (staged while the commit
  // runs); page 3's version written slowly, so that its commit waits for that write.
  Write(m, 0, 10);
  ASSERT_TRUE(m.flush_all().ok());
  ASSERT_TRUE(m.commit_nvme().ok());
  ASSERT_TRUE(m.evict_all().ok());
  { ASSERT_TRUE(m.acquire_sync(0, Access::kRead).ok()); }
  Write(m, 2, 12);
  Write(m, 3, 13);
  faults.set_latency_ns(kSlowWriteNs);
  const PageId three[] = {3};
  ASSERT_TRUE(m.flush(three).ok());

  std::atomic<bool> committed{false};
  std::future<void> started = tier.started();
  auto commit = std::async(std::launch::async, [&] {
    Status st = m.commit_nvme();
    committed.store(true);
    return st;
  });
  started.wait();

  auto hit = m.acquire(0, Access::kRead);
  ASSERT_EQ(hit.wait_for(std::chrono::seconds(1)), std::future_status::ready);
  const PageId two[] = {2};
  auto staged = std::async(std::launch::async, [&] { return m.flush(two); });
  ASSERT_EQ(staged.wait_for(std::chrono::seconds(1)), std::future_status::ready)
      << "staging waited for the commit in flight";
  EXPECT_FALSE(committed.load()) << "the commit finished early: the test proves nothing";

  auto h = hit.get();
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(CheckPattern(h->data(), kPage, 0, 10), -1);
  ASSERT_TRUE(staged.get().ok());
  ASSERT_TRUE(commit.get().ok());
  EXPECT_TRUE(committed.load());
  faults.set_latency_ns(0);
  // Page 2 was staged while the batch in flight was being committed: the next commit makes it
  // durable. (Rarely, under load on 2 cores, it is already durable here: seen twice in 20 runs
  // of the suite at -j2 on 2026-11-25, cause not yet found; what this test holds, that staging
  // does not wait for a commit in flight, is checked above either way.)
  EXPECT_TRUE(m.residency(3).valid[2]);
  EXPECT_TRUE(m.residency(2).nvme_staged || m.residency(2).valid[2]);
  ASSERT_TRUE(m.commit_nvme().ok());
  EXPECT_TRUE(m.residency(2).valid[2]);
}

// Note [Commit order] (memory/write_back.cc): a commit_nvme that finds nothing staged of its own
// still returns only after a commit sealed before it, holding another page's version, is done:
// a snapshot taken right after must see that version.
TEST_F(MemoryManagerLockingConcurrent, CommitWaitsForACommitSealedBeforeIt) {
  MemoryManager& m = *mm_;
  storage::FaultInjector& faults = faults_;
  SignallingTier& tier = *tier_;
  Write(m, 3, 13);
  faults.set_latency_ns(kSlowWriteNs / 3);
  const PageId three[] = {3};
  ASSERT_TRUE(m.flush(three).ok());
  std::future<void> started = tier.started();
  auto first = std::async(std::launch::async, [&] { return m.commit_nvme(); });
  started.wait();
  ASSERT_TRUE(m.commit_nvme().ok());  // its own batch is empty
  EXPECT_TRUE(m.residency(3).valid[2]) << "returned while an earlier commit was in flight";
  ASSERT_TRUE(first.get().ok());
  faults.set_latency_ns(0);
}

}  // namespace
}  // namespace strata::memory
