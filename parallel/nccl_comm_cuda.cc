#ifdef STRATA_WITH_NCCL

#include <unistd.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/util/option.h"
#include "parallel/mpi_comm.h"
#include "parallel/nccl_channel.h"
#include "parallel/nccl_comm.h"
#include "parallel/nccl_ops.h"
#include "parallel/op_status.h"
#include "parallel/routed_comm.h"

namespace strata::parallel {
namespace {

// True for memory a GPU holds (device or managed), which NCCL can read; host memory, pinned or
// not, is the MPI side's (routed_comm.h).
bool IsGpuMemory(const void* ptr) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    cudaGetLastError();  // clear it: an unknown pointer is host memory
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// Concurrency: ops are issued from one thread at a time (comm.h); the channel is thread-safe.
class NcclComm final : public Comm {
 public:
  NcclComm(std::shared_ptr<Comm> bootstrap, std::shared_ptr<NcclChannel> channel)
      : bootstrap_(std::move(bootstrap)), channel_(std::move(channel)) {}

  Result<std::unique_ptr<Comm>> split(int color, int key) override;
  int rank() const override { return channel_->rank(); }
  int size() const override { return channel_->size(); }
  CommBackend backend() const override { return CommBackend::kNccl; }
  int device() const override { return channel_->device(); }

  CommWork all_reduce_sum(const float* send, float* recv, size_t count) override {
    return issue({.name = "all_reduce_sum(float)", .bytes = count * sizeof(float)},
                 [&] { return NcclAllReduceSum(*channel_, send, recv, count); });
  }
  CommWork all_reduce_sum(const double* send, double* recv, size_t count) override {
    return issue({.name = "all_reduce_sum(double)", .bytes = count * sizeof(double)},
                 [&] { return NcclAllReduceSum(*channel_, send, recv, count); });
  }
  CommWork reduce_scatter_sum(const float* send, float* recv, size_t recv_count) override {
    return issue(
        {.name = "reduce_scatter_sum(float)", .bytes = recv_count * sizeof(float) * size()},
        [&] { return NcclReduceScatterSum(*channel_, send, recv, recv_count); });
  }
  CommWork reduce_scatter_sum(const double* send, double* recv, size_t recv_count) override {
    return issue(
        {.name = "reduce_scatter_sum(double)", .bytes = recv_count * sizeof(double) * size()},
        [&] { return NcclReduceScatterSum(*channel_, send, recv, recv_count); });
  }
  CommWork all_gather(const void* send, void* recv, size_t bytes_per_rank) override {
    return issue({.name = "all_gather", .bytes = bytes_per_rank},
                 [&] { return NcclAllGather(*channel_, send, recv, bytes_per_rank); });
  }
  CommWork broadcast(void* buffer, size_t bytes, int root) override;
  CommWork send(const void* buffer, size_t bytes, int peer, int tag) override;
  CommWork recv(void* buffer, size_t bytes, int peer, int tag) override;
  CommWork send_recv(const void* send, size_t send_bytes, int to, void* recv, size_t recv_bytes,
                     int from, int tag) override;
  Status barrier() override;

  [[noreturn]] void abort(int code) override {
    channel_->fail(Status::Aborted("Comm::abort(" + std::to_string(code) + ")"));
    bootstrap_->abort(code);
    std::_Exit(code);  // not reached: MPI_Abort ends the process
  }

 private:
  CommWork issue(const OpInfo& op, const std::function<Status()>& enqueue);

  const std::shared_ptr<Comm> bootstrap_;  // MPI: unique id, barrier, abort (and host ops)
  const std::shared_ptr<NcclChannel> channel_;
};

// Enqueues the op and records an event after it; a failure to enqueue breaks the comm (the
// stream may hold half an op).
CommWork NcclComm::issue(const OpInfo& op, const std::function<Status()>& enqueue) {
  if (Status failure = channel_->failure(); !failure.ok()) {
    return CommWork::Done(OpNotRun(op, rank(), size(), failure));
  }
  Status status = CudaStatus(cudaSetDevice(channel_->device()), "cudaSetDevice");
  if (status.ok()) status = enqueue();
  cudaEvent_t event = nullptr;
  if (status.ok()) {
    status =
        CudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  }
  if (status.ok()) {
    status = CudaStatus(cudaEventRecord(event, channel_->stream()), "cudaEventRecord");
    if (!status.ok()) cudaEventDestroy(event);
  }
  if (!status.ok()) {
    status = OpFailed(op, rank(), size(), status);
    channel_->fail(status);
    return CommWork::Done(status);
  }
  return CommWork(std::make_shared<NcclWork>(channel_, event, op));
}

CommWork NcclComm::broadcast(void* buffer, size_t bytes, int root) {
  const OpInfo op{.name = "broadcast", .bytes = bytes};
  if (Status bad = CheckRoot(op, rank(), size(), root); !bad.ok()) return CommWork::Done(bad);
  return issue(op, [&] { return NcclBroadcast(*channel_, buffer, bytes, root); });
}

CommWork NcclComm::send(const void* buffer, size_t bytes, int peer, int tag) {
  const OpInfo op{.name = "send", .bytes = bytes, .peer = peer, .tag = tag};
  if (Status bad = CheckPeer(op, rank(), size(), peer, tag); !bad.ok()) return CommWork::Done(bad);
  return issue(op, [&] { return NcclSendRecv(*channel_, buffer, bytes, peer, nullptr, 0, -1); });
}

CommWork NcclComm::recv(void* buffer, size_t bytes, int peer, int tag) {
  const OpInfo op{.name = "recv", .bytes = bytes, .peer = peer, .tag = tag};
  if (Status bad = CheckPeer(op, rank(), size(), peer, tag); !bad.ok()) return CommWork::Done(bad);
  return issue(op, [&] { return NcclSendRecv(*channel_, nullptr, 0, -1, buffer, bytes, peer); });
}

CommWork NcclComm::send_recv(const void* send, size_t send_bytes, int to, void* recv,
                             size_t recv_bytes, int from, int tag) {
  const OpInfo op{.name = "send_recv", .bytes = send_bytes, .peer = to, .tag = tag};
  if (Status bad = CheckPeer(op, rank(), size(), to, tag); !bad.ok()) return CommWork::Done(bad);
  if (Status bad = CheckPeer(op, rank(), size(), from, tag); !bad.ok()) {
    return CommWork::Done(bad);
  }
  return issue(
      op, [&] { return NcclSendRecv(*channel_, send, send_bytes, to, recv, recv_bytes, from); });
}

// The stream drains first (every op issued here before the barrier), then the ranks meet over
// MPI.
Status NcclComm::barrier() {
  STRATA_RETURN_IF_ERROR(issue({.name = "barrier"}, [] { return Status::Ok(); }).wait());
  return bootstrap_->barrier();
}

// The ops issued before it complete first (stream order); then the MPI bootstrap splits, which
// checks within the timeout that every rank has come this far, before ncclCommSplit blocks on
// all of them. The new Comm has its own stream and, like this one, routes host buffers to its
// own MPI bootstrap.
Result<std::unique_ptr<Comm>> NcclComm::split(int color, int key) {
  if (color < 0) {
    return Status::InvalidArgument("split: color " + std::to_string(color) + " is negative");
  }
  STRATA_RETURN_IF_ERROR(issue({.name = "split"}, [] { return Status::Ok(); }).wait());
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Comm> host, bootstrap_->split(color, key));
  STRATA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(channel_->device()), "cudaSetDevice"));
  cudaStream_t stream = nullptr;
  STRATA_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  ncclComm_t comm = nullptr;
  int nccl_rank = -1, nccl_size = 0;
  Status made = NcclStatus(ncclCommSplit(channel_->comm(), color, key, &comm, nullptr),
                           "ncclCommSplit");
  if (made.ok()) made = NcclStatus(ncclCommUserRank(comm, &nccl_rank), "ncclCommUserRank");
  if (made.ok()) made = NcclStatus(ncclCommCount(comm, &nccl_size), "ncclCommCount");
  if (made.ok() && (nccl_rank != host->rank() || nccl_size != host->size())) {
    made = Status::Internal("ncclCommSplit ranked this process " + std::to_string(nccl_rank) +
                            " of " + std::to_string(nccl_size) + ", MPI " +
                            std::to_string(host->rank()) + " of " + std::to_string(host->size()));
  }
  if (!made.ok()) {
    if (comm != nullptr) ncclCommDestroy(comm);
    cudaStreamDestroy(stream);
    return made.with_context("split of the NCCL comm on rank " + std::to_string(rank()));
  }
  auto channel = std::make_shared<NcclChannel>(channel_->device(), nccl_rank, nccl_size, stream,
                                               comm, channel_->timeout_s());
  return CreateRoutedComm(std::make_unique<NcclComm>(host, std::move(channel)), host, IsGpuMemory);
}

// This rank's index among the ranks on the same host (by host name), which picks its GPU.
Result<int> LocalRank(Comm& bootstrap) {
  constexpr size_t kNameBytes = 256;
  std::array<char, kNameBytes> mine{};
  if (gethostname(mine.data(), kNameBytes - 1) != 0) {
    return Status::FromErrno(errno, "gethostname");
  }
  std::vector<char> all(kNameBytes * bootstrap.size());
  STRATA_RETURN_IF_ERROR(bootstrap.all_gather(mine.data(), all.data(), kNameBytes).wait());
  int local_rank = 0;
  for (int r = 0; r < bootstrap.rank(); ++r) {
    if (std::memcmp(all.data() + r * kNameBytes, mine.data(), kNameBytes) == 0) ++local_rank;
  }
  return local_rank;
}

// Rank 0's unique id, with whether rank 0 could make one (so that the others fail with its
// reason instead of a timeout).
Result<ncclUniqueId> ShareUniqueId(Comm& bootstrap) {
  struct Message {
    ncclUniqueId id;
    int ok;
  } message{};
  Status made;
  if (bootstrap.rank() == 0) {
    made = NcclStatus(ncclGetUniqueId(&message.id), "ncclGetUniqueId");
    message.ok = made.ok() ? 1 : 0;
  }
  STRATA_RETURN_IF_ERROR(bootstrap.broadcast(&message, sizeof(message), 0).wait());
  if (!made.ok()) return made;
  if (message.ok == 0) return Status::Aborted("rank 0 could not create the NCCL unique id");
  return message.id;
}

Result<std::shared_ptr<NcclChannel>> OpenChannel(Comm& bootstrap, int device, double timeout_s) {
  STRATA_ASSIGN_OR_RETURN(ncclUniqueId id, ShareUniqueId(bootstrap));
  STRATA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
  cudaStream_t stream = nullptr;
  STRATA_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  ncclComm_t comm = nullptr;
  // Blocking: NCCL connects the ranks here. The bootstrap above has already checked, within
  // the timeout, that every rank is alive and reached this point.
  const Status init = NcclStatus(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()),
                                 "ncclCommInitRank");
  if (!init.ok()) {
    cudaStreamDestroy(stream);
    return init;
  }
  return std::make_shared<NcclChannel>(device, bootstrap.rank(), bootstrap.size(), stream, comm,
                                       timeout_s);
}

}  // namespace

Result<std::unique_ptr<Comm>> CreateNcclComm(const CommOptions& options) {
  int devices = 0;
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || devices == 0) {
    return AtFault(
        Option::kComm,
        Status::NotSupported(std::string(Mention(Option::kComm) +
                                         " nccl needs a CUDA build and a GPU: no CUDA device is "
                                         "visible (") +
                             (counted != cudaSuccess ? cudaGetErrorString(counted) : "0 devices") +
                             "); use " + Mention(Option::kComm) + " mpi"),
        {{"gpus", 0}});
  }
  CommOptions bootstrap_options = options;
  bootstrap_options.backend = CommBackend::kMpi;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Comm> bootstrap, CreateMpiComm(bootstrap_options));
  STRATA_ASSIGN_OR_RETURN(int local_rank, LocalRank(*bootstrap));
  auto channel = OpenChannel(*bootstrap, local_rank % devices, options.timeout_s);
  if (!channel.ok()) {
    return channel.status().with_context("creating the NCCL comm on rank " +
                                         std::to_string(bootstrap->rank()));
  }
  // Device buffers go to NCCL, host buffers (losses, norm partials, agreements) to the MPI
  // bootstrap.
  return CreateRoutedComm(std::make_unique<NcclComm>(bootstrap, *channel), bootstrap, IsGpuMemory);
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_NCCL
