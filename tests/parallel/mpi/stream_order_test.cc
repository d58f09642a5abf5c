// Stream order: ops issued back to back without waiting run one after another in issue order,
// each seeing what the one before it produced, and complete in that order.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "mpi_test_util.h"
#include "parallel/rank_fold.h"

namespace strata::parallel::testing_mpi {
namespace {

// Reading done() from the newest work to the oldest: once one is done, every older one must be
// (they completed before it on the one comm thread).
void ExpectCompletedPrefix(const std::vector<CommWork>& works) {
  bool newer_done = false;
  for (size_t i = works.size(); i-- > 0;) {
    const bool done = works[i].done();
    if (newer_done) {
      ASSERT_TRUE(done) << "work " << i << " is not done but a later one is";
    }
    newer_done = newer_done || done;
  }
}

TEST(MpiStreamOrder, ChainedOpsQueuedBackToBackCompleteInOrder) {
  Comm& comm = World();
  constexpr int kSteps = 200;
  // x starts as 1 on rank 0 and 0 elsewhere; each in-place all-reduce folds the previous
  // result, a broadcast from a rotating root sends it on, an all-gather copies it out.
  double x = comm.rank() == 0 ? 1.0 : 0.0;
  std::vector<double> gathered(static_cast<size_t>(kSteps) * comm.size());
  std::vector<CommWork> works;
  for (int k = 0; k < kSteps; ++k) {
    works.push_back(comm.all_reduce_sum(&x, &x, 1));
    works.push_back(comm.broadcast(&x, sizeof(x), k % comm.size()));
    works.push_back(
        comm.all_gather(&x, &gathered[static_cast<size_t>(k) * comm.size()], sizeof(double)));
  }
  while (!works.back().done()) {
    ExpectCompletedPrefix(works);
    std::this_thread::yield();
  }
  ExpectCompletedPrefix(works);
  for (const CommWork& work : works) ASSERT_TRUE(work.wait().ok());

  std::vector<double> copies(comm.size());
  double expected = 1.0;  // after the first all-reduce every rank holds the same value
  for (int k = 0; k < kSteps; ++k) {
    if (k > 0) {
      std::fill(copies.begin(), copies.end(), expected);
      FoldInRankOrder(copies.data(), 1, comm.size(), &expected);
    }
    for (int r = 0; r < comm.size(); ++r) {
      ASSERT_EQ(gathered[static_cast<size_t>(k) * comm.size() + r], expected) << k << " " << r;
    }
  }
  EXPECT_EQ(x, expected);
}

// Two comms are independent streams: each driven from its own thread, concurrently.
TEST(MpiStreamOrderThread, TwoCommsFromTwoThreads) {
  auto second = CreateComm({.backend = CommBackend::kMpi, .timeout_s = 60});
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  Comm* comms[2] = {&World(), second->get()};
  std::vector<float> results[2];
  std::vector<std::thread> threads;
  for (int c = 0; c < 2; ++c) {
    threads.emplace_back([&, c] {
      std::vector<float> v(1000, static_cast<float>(c + 1));
      for (int k = 0; k < 20; ++k)
        EXPECT_TRUE(comms[c]->all_reduce_sum(v.data(), v.data(), v.size()).wait().ok());
      results[c] = v;
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < 2; ++c) {
    float expected = static_cast<float>(c + 1);
    std::vector<float> copies(World().size());
    for (int k = 0; k < 20; ++k) {
      std::fill(copies.begin(), copies.end(), expected);
      FoldInRankOrder(copies.data(), 1, World().size(), &expected);
    }
    EXPECT_EQ(results[c].front(), expected);
    EXPECT_EQ(results[c].back(), expected);
  }
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
