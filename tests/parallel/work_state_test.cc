// CompletionFlag and CommWork: complete once on one thread, waited on from others.
#include "parallel/work_state.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace strata::parallel {
namespace {

TEST(CommWork, DefaultAndDoneAreComplete) {
  EXPECT_TRUE(CommWork().done());
  EXPECT_TRUE(CommWork().wait().ok());
  const CommWork failed = CommWork::Done(Status::Timeout("late"));
  EXPECT_TRUE(failed.done());
  EXPECT_EQ(failed.wait().code(), StatusCode::kTimeout);
  EXPECT_EQ(failed.wait().message(), "late");  // every wait gives the same outcome
}

// Waiters block until the completing thread publishes; each sees the status. The completing
// thread starts only after every waiter has checked that the work is not done (a sync point,
// not a sleep).
TEST(CompletionFlagThread, EveryWaiterSeesTheOneCompletion) {
  auto flag = std::make_shared<CompletionFlag>();
  const CommWork work(flag);
  std::atomic<int> checked{0};
  std::vector<std::thread> waiters;
  std::vector<Status> seen(4);
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&, i] {
      EXPECT_FALSE(work.done());
      checked.fetch_add(1);
      seen[i] = work.wait();
    });
  }
  std::thread completer([&] {
    while (checked.load() < 4) std::this_thread::yield();
    flag->complete(Status::Aborted("peer gone"));
  });
  completer.join();
  for (auto& t : waiters) t.join();
  for (const Status& s : seen) EXPECT_EQ(s.message(), "peer gone");
  EXPECT_TRUE(work.done());
}

}  // namespace
}  // namespace strata::parallel
