#include "parallel/local_comm.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "parallel/op_status.h"

namespace strata::parallel {
namespace {

// memmove, not memcpy: recv == send (in place) is allowed.
CommWork Copy(const void* send, void* recv, size_t bytes) {
  if (bytes > 0 && send != recv) std::memmove(recv, send, bytes);
  return CommWork();
}

class LocalComm final : public Comm {
 public:
  Result<std::unique_ptr<Comm>> split(int color, int /*key*/) override {
    if (color < 0) {
      return Status::InvalidArgument("split: color must be >= 0, got " + std::to_string(color));
    }
    return std::unique_ptr<Comm>(new LocalComm());
  }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  CommBackend backend() const override { return CommBackend::kLocal; }

  CommWork all_reduce_sum(const float* send, float* recv, size_t count) override {
    return Copy(send, recv, count * sizeof(float));
  }
  CommWork all_reduce_sum(const double* send, double* recv, size_t count) override {
    return Copy(send, recv, count * sizeof(double));
  }
  CommWork reduce_scatter_sum(const float* send, float* recv, size_t recv_count) override {
    return Copy(send, recv, recv_count * sizeof(float));
  }
  CommWork reduce_scatter_sum(const double* send, double* recv, size_t recv_count) override {
    return Copy(send, recv, recv_count * sizeof(double));
  }
  CommWork all_gather(const void* send, void* recv, size_t bytes_per_rank) override {
    return Copy(send, recv, bytes_per_rank);
  }
  CommWork broadcast(void* /*buffer*/, size_t bytes, int root) override {
    return CommWork::Done(CheckRoot({.name = "broadcast", .bytes = bytes}, 0, 1, root));
  }
  CommWork send(const void* /*buffer*/, size_t bytes, int peer, int tag) override {
    return NoPeer({.name = "send", .bytes = bytes, .peer = peer, .tag = tag});
  }
  CommWork recv(void* /*buffer*/, size_t bytes, int peer, int tag) override {
    return NoPeer({.name = "recv", .bytes = bytes, .peer = peer, .tag = tag});
  }
  CommWork send_recv(const void* /*send*/, size_t send_bytes, int to, void* /*recv*/,
                     size_t /*recv_bytes*/, int /*from*/, int tag) override {
    return NoPeer({.name = "send_recv", .bytes = send_bytes, .peer = to, .tag = tag});
  }
  Status barrier() override { return Status::Ok(); }

  [[noreturn]] void abort(int code) override {
    // No peers to stop; _Exit skips destructors that could wait on other threads.
    std::fflush(nullptr);
    std::_Exit(code);
  }

 private:
  static CommWork NoPeer(const OpInfo& op) {
    return CommWork::Done(CheckPeer(op, 0, 1, op.peer, op.tag));
  }
};

}  // namespace

std::unique_ptr<Comm> CreateLocalComm() { return std::make_unique<LocalComm>(); }

}  // namespace strata::parallel
