// RoutedComm (parallel/routed_comm.h): ops go to the backend that can read their buffers, a mix
// is refused, stream order holds across the two backends (an op on the other side waits for the
// last one), and a failure seen there breaks the comm. Two recording fakes stand for NCCL and MPI.
// `Concurrent`: the ordering tests issue from a second thread (the sanitize label runs them).
#include "parallel/routed_comm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "parallel/work_state.h"

namespace strata::parallel {
namespace {

// Records each op it is given; its works complete at once unless `pending` is set, in which case
// the next op's work is that flag (completed by the test).
class RecordingComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  CommBackend backend() const override { return CommBackend::kNccl; }
  CommWork all_reduce_sum(const float*, float*, size_t) override { return op("all_reduce"); }
  CommWork all_reduce_sum(const double*, double*, size_t) override { return op("all_reduce"); }
  CommWork reduce_scatter_sum(const float*, float*, size_t) override { return op("rs"); }
  CommWork reduce_scatter_sum(const double*, double*, size_t) override { return op("rs"); }
  CommWork all_gather(const void*, void*, size_t) override { return op("all_gather"); }
  CommWork broadcast(void*, size_t, int) override { return op("broadcast"); }
  CommWork send(const void*, size_t, int, int) override { return op("send"); }
  CommWork recv(void*, size_t, int, int) override { return op("recv"); }
  CommWork send_recv(const void*, size_t, int, void*, size_t, int, int) override {
    return op("send_recv");
  }
  Status barrier() override {
    ops.push_back("barrier");
    return Status::Ok();
  }
  Result<std::unique_ptr<Comm>> split(int, int) override { return Status::NotSupported("fake"); }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

  std::vector<std::string> ops;  // read after the issuing thread is done
  std::atomic<int> issued{0};
  std::shared_ptr<CompletionFlag> pending;

 private:
  CommWork op(const char* name) {
    ops.push_back(name);
    ++issued;
    if (pending) return CommWork(std::exchange(pending, nullptr));
    return CommWork::Done(Status::Ok());
  }
};

class RoutedCommConcurrent : public ::testing::Test {
 protected:
  RoutedCommConcurrent() {
    auto device = std::make_unique<RecordingComm>();
    device_ = device.get();
    host_ = std::make_shared<RecordingComm>();
    const float* gpu_begin = gpu_.data();
    const float* gpu_end = gpu_begin + gpu_.size();
    comm_ = CreateRoutedComm(std::move(device), host_, [gpu_begin, gpu_end](const void* p) {
      const auto* f = static_cast<const float*>(p);
      return f >= gpu_begin && f < gpu_end;
    });
  }

  std::vector<float> gpu_ = std::vector<float>(64);   // "device memory"
  std::vector<float> host_mem_ = std::vector<float>(64);
  RecordingComm* device_ = nullptr;
  std::shared_ptr<RecordingComm> host_;
  std::unique_ptr<Comm> comm_;
};

TEST_F(RoutedCommConcurrent, EachOpGoesToTheSideOfItsBuffers) {
  EXPECT_TRUE(comm_->all_reduce_sum(gpu_.data(), gpu_.data(), 8).wait().ok());
  EXPECT_TRUE(comm_->all_gather(host_mem_.data(), host_mem_.data() + 8, 4).wait().ok());
  EXPECT_TRUE(comm_->broadcast(gpu_.data(), 16, 0).wait().ok());
  EXPECT_TRUE(comm_->send_recv(host_mem_.data(), 4, 1, host_mem_.data() + 4, 4, 1, 0).wait().ok());
  EXPECT_EQ(device_->ops, (std::vector<std::string>{"all_reduce", "broadcast"}));
  EXPECT_EQ(host_->ops, (std::vector<std::string>{"all_gather", "send_recv"}));
  EXPECT_EQ(comm_->backend(), CommBackend::kNccl);
  EXPECT_EQ(comm_->size(), 2);
}

TEST_F(RoutedCommConcurrent, MixedBuffersAreRefusedAndRunNowhere) {
  Status s = comm_->all_gather(host_mem_.data(), gpu_.data(), 4).wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("all_gather"), std::string::npos) << s.to_string();
  EXPECT_TRUE(device_->ops.empty());
  EXPECT_TRUE(host_->ops.empty());
  // The comm stays usable.
  EXPECT_TRUE(comm_->all_reduce_sum(gpu_.data(), gpu_.data(), 8).wait().ok());
}

TEST_F(RoutedCommConcurrent, AnOpWithoutBuffersStaysOnTheLastSide) {
  EXPECT_TRUE(comm_->all_gather(host_mem_.data(), host_mem_.data() + 8, 4).wait().ok());
  EXPECT_TRUE(comm_->send_recv(nullptr, 0, 1, nullptr, 0, 1, 0).wait().ok());
  EXPECT_EQ(host_->ops.size(), 2u);
  EXPECT_TRUE(device_->ops.empty());
}

TEST_F(RoutedCommConcurrent, SwitchingSidesWaitsForTheOtherSidesLastOp) {
  auto flag = std::make_shared<CompletionFlag>();
  device_->pending = flag;
  CommWork device_work = comm_->all_reduce_sum(gpu_.data(), gpu_.data(), 8);
  EXPECT_FALSE(device_work.done());
  std::thread issuer([&] { comm_->all_gather(host_mem_.data(), host_mem_.data() + 8, 4); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(host_->issued.load(), 0) << "the host op started before the device op completed";
  flag->complete(Status::Ok());
  issuer.join();
  EXPECT_EQ(host_->issued.load(), 1);
}

TEST_F(RoutedCommConcurrent, AFailureSeenWhenSwitchingBreaksTheComm) {
  auto flag = std::make_shared<CompletionFlag>();
  device_->pending = flag;
  CommWork failed = comm_->all_reduce_sum(gpu_.data(), gpu_.data(), 8);
  flag->complete(Status::Timeout("all_reduce_sum timed out"));
  Status s = comm_->all_gather(host_mem_.data(), host_mem_.data() + 8, 4).wait();
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.to_string();
  EXPECT_EQ(comm_->broadcast(gpu_.data(), 4, 0).wait().code(), StatusCode::kAborted);
  EXPECT_TRUE(host_->ops.empty());
  EXPECT_EQ(device_->ops.size(), 1u);
}

TEST_F(RoutedCommConcurrent, BarrierWaitsForTheLastHostOpThenBarriersTheDeviceSide) {
  auto flag = std::make_shared<CompletionFlag>();
  host_->pending = flag;
  comm_->all_gather(host_mem_.data(), host_mem_.data() + 8, 4);
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    EXPECT_TRUE(comm_->barrier().ok());
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load());
  flag->complete(Status::Ok());
  waiter.join();
  EXPECT_EQ(device_->ops, (std::vector<std::string>{"barrier"}));
}

}  // namespace
}  // namespace strata::parallel
