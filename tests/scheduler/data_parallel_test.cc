// AgreeOnResumeStep (scheduler/data_parallel.h): the ranks' refusals to resume are at fault of
// the option to change, with the job's size (issue 32, item 2), their words unchanged.
#include "scheduler/data_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata::scheduler {
namespace {

// Rank 0 of two, whose peer lists `peer_steps`: all_gather is the only op AgreeOnResumeStep uses
// (the lists' widths, then the lists padded with -1); every other op fails.
class TwoRanks final : public parallel::Comm {
 public:
  explicit TwoRanks(std::vector<int64_t> peer_steps) : peer_(std::move(peer_steps)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  parallel::CommBackend backend() const override { return parallel::CommBackend::kLocal; }
  parallel::CommWork all_gather(const void* send, void* recv, size_t bytes) override {
    std::memcpy(recv, send, bytes);
    char* theirs = static_cast<char*>(recv) + bytes;
    if (gathers_++ == 0) {
      const int64_t width = int64_t(peer_.size());
      std::memcpy(theirs, &width, sizeof width);
    } else {
      std::vector<int64_t> padded(bytes / sizeof(int64_t), -1);
      std::copy(peer_.begin(), peer_.end(), padded.begin());
      std::memcpy(theirs, padded.data(), bytes);
    }
    return parallel::CommWork();
  }
  parallel::CommWork all_reduce_sum(const float*, float*, size_t) override { return Unused(); }
  parallel::CommWork all_reduce_sum(const double*, double*, size_t) override { return Unused(); }
  parallel::CommWork reduce_scatter_sum(const float*, float*, size_t) override { return Unused(); }
  parallel::CommWork reduce_scatter_sum(const double*, double*, size_t) override {
    return Unused();
  }
  parallel::CommWork broadcast(void*, size_t, int) override { return Unused(); }
  parallel::CommWork send(const void*, size_t, int, int) override { return Unused(); }
  parallel::CommWork recv(void*, size_t, int, int) override { return Unused(); }
  parallel::CommWork send_recv(const void*, size_t, int, void*, size_t, int, int) override {
    return Unused();
  }
  Status barrier() override { return Status::Internal("unused"); }
  Result<std::unique_ptr<parallel::Comm>> split(int, int) override {
    return Status::Internal("unused");
  }
  [[noreturn]] void abort(int) override { std::abort(); }

 private:
  static parallel::CommWork Unused() {
    return parallel::CommWork::Done(Status::Internal("unused"));
  }
  std::vector<int64_t> peer_;
  int gathers_ = 0;
};

TEST(AgreeOnResumeStep, TheNewestCommonStepIsChosen) {
  TwoRanks comm({4, 2});
  const Result<long> step = AgreeOnResumeStep(comm, {6, 4, 2}, -1);
  ASSERT_TRUE(step.ok()) << step.status().to_string();
  EXPECT_EQ(*step, 4);
}

TEST(AgreeOnResumeStep, AStepSomeRankLacksIsAtFaultOfResumeFrom) {
  TwoRanks comm({4});
  const Result<long> step = AgreeOnResumeStep(comm, {6, 4}, 6);
  EXPECT_EQ(step.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(step.status().message().find(
                "{resume_from} 6: not every rank has that checkpoint (rank 0: 6, 4; rank 1: 4)"),
            std::string::npos)
      << step.status().to_string();
  test_support::ExpectFault(step.status(), Option::kResumeFrom, {{"got", 6}, {"ranks", 2}});
}

TEST(AgreeOnResumeStep, NoCommonStepIsAtFaultOfResume) {
  TwoRanks comm({3});
  const Result<long> step = AgreeOnResumeStep(comm, {6}, -1);
  EXPECT_EQ(step.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(step.status().message().find("{resume}: no checkpoint step is listed by every rank "
                                         "(rank 0: 6; rank 1: 3)"),
            std::string::npos)
      << step.status().to_string();
  test_support::ExpectFault(step.status(), Option::kResume, {{"ranks", 2}});
}

}  // namespace
}  // namespace strata::scheduler
