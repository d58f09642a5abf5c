#include "scheduler/host_pages.h"

#include <gtest/gtest.h>

#include <memory>

namespace strata::scheduler {
namespace {

using memory::Access;

std::unique_ptr<memory::MemoryManager> Manager() {
  auto mm =
      memory::MemoryManager::Create({.page_bytes = 4096, .num_pages = 8, .host_bytes = 8 * 4096});
  EXPECT_TRUE(mm.ok()) << mm.status().to_string();
  return std::move(*mm);
}

// Note [Host access plan]: the acquires of the recorded step, the driver's then the
// optimizer's, each in its own order; other steps' acquires are not in it.
TEST(HostPages, RecordsOneStepsAcquiresAsAPlanPerAcquirer) {
  auto mm = Manager();
  HostPages host(*mm);
  auto touch = [&](memory::PageId p, Acquirer a, long step) {
    ASSERT_TRUE(host.acquire(p, Access::kRead, a, "test", step).ok());
  };
  touch(0, Acquirer::kDriver, 4);
  host.record(5);
  touch(1, Acquirer::kDriver, 5);
  touch(2, Acquirer::kOptimizer, 5);
  touch(3, Acquirer::kDriver, 5);
  touch(4, Acquirer::kOptimizer, 6);
  touch(5, Acquirer::kOptimizer, 5);
  std::vector<memory::PlannedAccess> plan = host.take_plan();
  ASSERT_EQ(plan.size(), 4u);
  const memory::PageId pages[] = {1, 3, 2, 5};
  const uint8_t acquirers[] = {0, 0, 1, 1};
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].page, pages[i]) << i;
    EXPECT_EQ(plan[i].acquirer, acquirers[i]) << i;
  }
  EXPECT_EQ(host.recorded_step(), -1);
  touch(6, Acquirer::kDriver, 5);
  EXPECT_TRUE(host.take_plan().empty());
}

TEST(HostPages, HomesStayPinnedButWhileTheyAreWritten) {
  auto mm = Manager();
  HostPages host(*mm);
  ASSERT_TRUE(host.set_homes({2, 3}).ok());
  EXPECT_EQ(mm->residency(2).readers, 1);
  EXPECT_EQ(mm->residency(4).readers, 0);
  {
    auto w = host.acquire(2, Access::kWrite, Acquirer::kOptimizer, "test", 0);
    ASSERT_TRUE(w.ok());
    EXPECT_TRUE(mm->residency(2).writer);  // the home pin was given up for the writer
    EXPECT_EQ(mm->residency(2).readers, 0);
    ASSERT_TRUE(host.release(*w).ok());
  }
  EXPECT_EQ(mm->residency(2).readers, 1);
  {
    auto w = host.acquire(4, Access::kWrite, Acquirer::kOptimizer, "test", 0);  // not a home
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(host.release(*w).ok());
  }
  EXPECT_EQ(mm->residency(4).readers, 0);
  host.release_homes();
  EXPECT_EQ(mm->residency(3).readers, 0);
}

}  // namespace
}  // namespace strata::scheduler
