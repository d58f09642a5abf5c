#include "parallel/routed_comm.h"

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

namespace strata::parallel {
namespace {

class RoutedComm final : public Comm {
 public:
  RoutedComm(std::unique_ptr<Comm> device, std::shared_ptr<Comm> host, IsDeviceMemory is_device)
      : device_(std::move(device)), host_(std::move(host)), is_device_(std::move(is_device)) {}

  int rank() const override { return device_->rank(); }
  int size() const override { return device_->size(); }
  CommBackend backend() const override { return device_->backend(); }
  int device() const override { return device_->device(); }

  CommWork all_reduce_sum(const float* send, float* recv, size_t count) override {
    return route("all_reduce_sum", {send, recv},
                 [&](Comm& c) { return c.all_reduce_sum(send, recv, count); });
  }
  CommWork all_reduce_sum(const double* send, double* recv, size_t count) override {
    return route("all_reduce_sum", {send, recv},
                 [&](Comm& c) { return c.all_reduce_sum(send, recv, count); });
  }
  CommWork reduce_scatter_sum(const float* send, float* recv, size_t recv_count) override {
    return route("reduce_scatter_sum", {send, recv},
                 [&](Comm& c) { return c.reduce_scatter_sum(send, recv, recv_count); });
  }
  CommWork reduce_scatter_sum(const double* send, double* recv, size_t recv_count) override {
    return route("reduce_scatter_sum", {send, recv},
                 [&](Comm& c) { return c.reduce_scatter_sum(send, recv, recv_count); });
  }
  CommWork all_gather(const void* send, void* recv, size_t bytes_per_rank) override {
    return route("all_gather", {send, recv},
                 [&](Comm& c) { return c.all_gather(send, recv, bytes_per_rank); });
  }
  CommWork broadcast(void* buffer, size_t bytes, int root) override {
    return route("broadcast", {buffer}, [&](Comm& c) { return c.broadcast(buffer, bytes, root); });
  }
  CommWork send(const void* buffer, size_t bytes, int peer, int tag) override {
    return route("send", {buffer}, [&](Comm& c) { return c.send(buffer, bytes, peer, tag); });
  }
  CommWork recv(void* buffer, size_t bytes, int peer, int tag) override {
    return route("recv", {buffer}, [&](Comm& c) { return c.recv(buffer, bytes, peer, tag); });
  }
  CommWork send_recv(const void* send, size_t send_bytes, int to, void* recv, size_t recv_bytes,
                     int from, int tag) override {
    return route("send_recv", {send, recv}, [&](Comm& c) {
      return c.send_recv(send, send_bytes, to, recv, recv_bytes, from, tag);
    });
  }

  Status barrier() override {
    if (last_side_ == Side::kHost) STRATA_RETURN_IF_ERROR(last_.wait());
    return device_->barrier();
  }
  Result<std::unique_ptr<Comm>> split(int color, int key) override {
    return device_->split(color, key);
  }
  [[noreturn]] void abort(int code) override {
    device_->abort(code);
    std::_Exit(code);  // not reached: the backend's abort ends the process
  }

 private:
  enum class Side { kNone, kHost, kDevice };

  CommWork route(const char* op, std::initializer_list<const void*> buffers,
                 const std::function<CommWork(Comm&)>& issue) {
    Side side = Side::kNone;
    for (const void* p : buffers) {
      if (p == nullptr) continue;
      const Side s = is_device_(p) ? Side::kDevice : Side::kHost;
      if (side != Side::kNone && s != side) {
        return CommWork::Done(Status::InvalidArgument(
            std::string(op) + " on rank " + std::to_string(rank()) +
            ": one buffer is host memory and another device memory; give both on one side"));
      }
      side = s;
    }
    if (side == Side::kNone) side = last_side_ == Side::kNone ? Side::kDevice : last_side_;
    if (side != last_side_ && last_side_ != Side::kNone && broken_.ok()) {
      // Stream order across the backends: the other side's last op completes first.
      if (Status s = last_.wait(); !s.ok()) broken_ = s;
    }
    if (!broken_.ok()) {
      return CommWork::Done(Status::Aborted(std::string(op) + " on rank " +
                                            std::to_string(rank()) +
                                            " not run: an earlier op failed: " +
                                            broken_.to_string()));
    }
    last_ = issue(side == Side::kDevice ? *device_ : *host_);
    last_side_ = side;
    return last_;
  }

  const std::unique_ptr<Comm> device_;
  const std::shared_ptr<Comm> host_;
  const IsDeviceMemory is_device_;
  Side last_side_ = Side::kNone;
  CommWork last_;   // the last op issued, on last_side_
  Status broken_;  // the first failure seen when switching sides
};

}  // namespace

std::unique_ptr<Comm> CreateRoutedComm(std::unique_ptr<Comm> device, std::shared_ptr<Comm> host,
                                       IsDeviceMemory is_device_memory) {
  return std::make_unique<RoutedComm>(std::move(device), std::move(host),
                                      std::move(is_device_memory));
}

}  // namespace strata::parallel
