#ifdef STRATA_WITH_MPI

#include "parallel/mpi_comm.h"

#include <mpi.h>
#include <tbb/concurrent_queue.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "core/util/log.h"
#include "core/util/thread_name.h"
#include "parallel/mpi_lifetime.h"
#include "parallel/mpi_op_context.h"
#include "parallel/mpi_ops.h"
#include "parallel/mpi_status.h"
#include "parallel/op_status.h"
#include "parallel/work_state.h"

namespace strata::parallel {
namespace {

using Clock = MpiOpContext::Clock;

// Longer timeouts than this (about 30 years) would overflow the clock; they mean "never".
constexpr double kMaxTimeoutS = 1e9;

// Concurrency: the issuing thread pushes ops on queue_ and reads rank_/size_ (written by the
// setup op, which completes before Create returns: its flag orders them). Everything under
// "comm thread only" is touched by the comm thread alone.
class MpiComm final : public Comm {
 public:
  MpiComm(std::shared_ptr<MpiLifetime> lifetime, double timeout_s)
      : lifetime_(std::move(lifetime)),
        timeout_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(std::min(timeout_s, kMaxTimeoutS)))),
        timeout_s_(timeout_s),
        thread_([this] { run(); }) {}

  ~MpiComm() override {
    queue_.push(nullptr);  // runs what is queued, then stops
    thread_.join();
  }

  // Duplicates MPI_COMM_WORLD on the comm thread (collective: every rank must create its Comm).
  Status setup() {
    return enqueue({.name = "create (MPI_Comm_idup)"},
                   [this](MpiOpContext& ctx) { return duplicate_world(ctx); })
        .wait();
  }

  // Takes `comm` (a split's result) as this Comm's communicator, on the comm thread.
  Status adopt(MPI_Comm comm) {
    return enqueue({.name = "adopt a split communicator"},
                   [this, comm](MpiOpContext&) { return use(comm); })
        .wait();
  }

  Result<std::unique_ptr<Comm>> split(int color, int key) override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  CommBackend backend() const override { return CommBackend::kMpi; }

  CommWork all_reduce_sum(const float* send, float* recv, size_t count) override {
    return enqueue({.name = "all_reduce_sum(float)", .bytes = count * sizeof(float)},
                   [=](MpiOpContext& ctx) { return MpiAllReduceSum(ctx, send, recv, count); });
  }
  CommWork all_reduce_sum(const double* send, double* recv, size_t count) override {
    return enqueue({.name = "all_reduce_sum(double)", .bytes = count * sizeof(double)},
                   [=](MpiOpContext& ctx) { return MpiAllReduceSum(ctx, send, recv, count); });
  }
  CommWork reduce_scatter_sum(const float* send, float* recv, size_t recv_count) override {
    return enqueue(
        {.name = "reduce_scatter_sum(float)", .bytes = recv_count * sizeof(float) * size_},
        [=](MpiOpContext& ctx) { return MpiReduceScatterSum(ctx, send, recv, recv_count); });
  }
  CommWork reduce_scatter_sum(const double* send, double* recv, size_t recv_count) override {
    return enqueue(
        {.name = "reduce_scatter_sum(double)", .bytes = recv_count * sizeof(double) * size_},
        [=](MpiOpContext& ctx) { return MpiReduceScatterSum(ctx, send, recv, recv_count); });
  }
  CommWork all_gather(const void* send, void* recv, size_t bytes_per_rank) override {
    return enqueue({.name = "all_gather", .bytes = bytes_per_rank}, [=](MpiOpContext& ctx) {
      return MpiAllGather(ctx, send, recv, bytes_per_rank);
    });
  }
  CommWork broadcast(void* buffer, size_t bytes, int root) override;
  CommWork send(const void* buffer, size_t bytes, int peer, int tag) override;
  CommWork recv(void* buffer, size_t bytes, int peer, int tag) override;
  CommWork send_recv(const void* send, size_t send_bytes, int to, void* recv, size_t recv_bytes,
                     int from, int tag) override;

  Status barrier() override {
    return enqueue({.name = "barrier"}, [](MpiOpContext& ctx) { return MpiBarrier(ctx); }).wait();
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(nullptr);
    // MPI_COMM_WORLD, not the duplicate: the whole job ends, and the comm thread may be using
    // comm_ right now.
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return; if it does, this rank still ends
  }

 private:
  using Body = std::function<Status(MpiOpContext&)>;
  struct Op {
    OpInfo info;
    Body body;
    std::shared_ptr<CompletionFlag> flag = std::make_shared<CompletionFlag>();
  };

  CommWork enqueue(OpInfo info, Body body) {
    auto op = std::make_unique<Op>(Op{.info = info, .body = std::move(body)});
    CommWork work(op->flag);
    queue_.push(std::move(op));
    return work;
  }

  void run();
  void execute(Op& op);
  Status duplicate_world(MpiOpContext& ctx);
  Status use(MPI_Comm comm);
  void close();

  const std::shared_ptr<MpiLifetime> lifetime_;  // first: MPI outlives the thread and comm_
  const Clock::duration timeout_;
  const double timeout_s_;  // as given, for messages
  int rank_ = 0;
  int size_ = 1;
  tbb::concurrent_bounded_queue<std::unique_ptr<Op>> queue_;  // nullptr: stop
  // Comm thread only.
  MPI_Comm comm_ = MPI_COMM_NULL;
  Status failure_;  // the first failed op's error; later ops are not run
  HostScratch scratch_;
  std::vector<MPI_Request> abandoned_;  // requests of failed ops, still pending in MPI
  std::thread thread_;                  // last: starts after every other member exists
};

CommWork MpiComm::broadcast(void* buffer, size_t bytes, int root) {
  const OpInfo op{.name = "broadcast", .bytes = bytes};
  if (Status bad = CheckRoot(op, rank_, size_, root); !bad.ok()) return CommWork::Done(bad);
  return enqueue(op, [=](MpiOpContext& ctx) { return MpiBroadcast(ctx, buffer, bytes, root); });
}

CommWork MpiComm::send(const void* buffer, size_t bytes, int peer, int tag) {
  const OpInfo op{.name = "send", .bytes = bytes, .peer = peer, .tag = tag};
  if (Status bad = CheckPeer(op, rank_, size_, peer, tag); !bad.ok()) return CommWork::Done(bad);
  return enqueue(op, [=](MpiOpContext& ctx) { return MpiSend(ctx, buffer, bytes, peer, tag); });
}

CommWork MpiComm::recv(void* buffer, size_t bytes, int peer, int tag) {
  const OpInfo op{.name = "recv", .bytes = bytes, .peer = peer, .tag = tag};
  if (Status bad = CheckPeer(op, rank_, size_, peer, tag); !bad.ok()) return CommWork::Done(bad);
  return enqueue(op, [=](MpiOpContext& ctx) { return MpiRecv(ctx, buffer, bytes, peer, tag); });
}

CommWork MpiComm::send_recv(const void* send, size_t send_bytes, int to, void* recv,
                            size_t recv_bytes, int from, int tag) {
  const OpInfo op{.name = "send_recv", .bytes = send_bytes, .peer = to, .tag = tag};
  if (Status bad = CheckPeer(op, rank_, size_, to, tag); !bad.ok()) return CommWork::Done(bad);
  if (Status bad = CheckPeer(op, rank_, size_, from, tag); !bad.ok()) return CommWork::Done(bad);
  return enqueue(op, [=](MpiOpContext& ctx) {
    return MpiSendRecv(ctx, send, send_bytes, to, recv, recv_bytes, from, tag);
  });
}

void MpiComm::run() {
  SetThreadName("mpi-comm");
  for (;;) {
    std::unique_ptr<Op> op;
    queue_.pop(op);
    if (op == nullptr) break;
    execute(*op);
  }
  close();
}

// The deadline starts now, when the op starts, not when it was issued: ops queued behind a slow
// one are not charged for its time.
void MpiComm::execute(Op& op) {
  if (!failure_.ok()) {
    op.flag->complete(OpNotRun(op.info, rank_, size_, failure_));
    return;
  }
  MpiOpContext ctx(comm_, rank_, size_, Clock::now() + timeout_, scratch_, abandoned_);
  Status status = op.body(ctx);
  if (!status.ok()) {
    status = status.code() == StatusCode::kTimeout ? OpTimeout(op.info, rank_, size_, timeout_s_)
                                                   : OpFailed(op.info, rank_, size_, status);
    failure_ = status;
    Logger("parallel")->error("{}", status.message());
  }
  op.flag->complete(std::move(status));
}

Status MpiComm::duplicate_world(MpiOpContext& ctx) {
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank"));
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size"));
  // MPI writes the new handle when the idup completes, which may be after a timeout and after
  // this object is gone: the target lives on the heap and is leaked if the wait fails.
  auto target = std::make_unique<MPI_Comm>(MPI_COMM_NULL);
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_RETURN_IF_ERROR(
      MpiStatus(MPI_Comm_idup(MPI_COMM_WORLD, target.get(), &request), "MPI_Comm_idup"));
  if (Status done = ctx.wait(&request, 1); !done.ok()) {
    static_cast<void>(target.release());  // deliberate, see above
    return done;
  }
  return use(*target);
}

Status MpiComm::use(MPI_Comm comm) {
  comm_ = comm;
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank"));
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Comm_size(comm_, &size_), "MPI_Comm_size"));
  // Errors come back as codes (MpiStatus) instead of killing the job from inside MPI.
  return MpiStatus(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

// MPI_Comm_split blocks and has no non-blocking form: a barrier with this Comm's timeout goes
// first, so a rank that never splits fails the others' barrier instead of hanging their split.
Result<std::unique_ptr<Comm>> MpiComm::split(int color, int key) {
  if (color < 0) {
    return Status::InvalidArgument("split: color must be >= 0, got " + std::to_string(color));
  }
  auto sub = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
  STRATA_RETURN_IF_ERROR(
      enqueue({.name = "split (MPI_Comm_split)"}, [sub, color, key](MpiOpContext& ctx) {
        STRATA_RETURN_IF_ERROR(MpiBarrier(ctx));
        return MpiStatus(MPI_Comm_split(ctx.comm(), color, key, sub.get()), "MPI_Comm_split");
      }).wait());
  auto child = std::make_unique<MpiComm>(lifetime_, timeout_s_);
  STRATA_RETURN_IF_ERROR(child->adopt(*sub));
  return std::unique_ptr<Comm>(std::move(child));
}

// MPI_Comm_free only marks the communicator: pending (abandoned) requests keep it alive inside
// MPI. Their buffers may still be written, so the scratch is leaked rather than freed.
void MpiComm::close() {
  if (!abandoned_.empty()) {
    Logger("parallel")
        ->warn("closing an MPI comm with {} request(s) of failed ops still pending",
               abandoned_.size());
    scratch_.leak();
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

}  // namespace

Result<std::unique_ptr<Comm>> CreateMpiComm(const CommOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<MpiLifetime> lifetime, MpiLifetime::Acquire());
  auto comm = std::make_unique<MpiComm>(std::move(lifetime), options.timeout_s);
  STRATA_RETURN_IF_ERROR(comm->setup());
  return std::unique_ptr<Comm>(std::move(comm));
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_MPI
