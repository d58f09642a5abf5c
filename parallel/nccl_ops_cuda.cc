#ifdef STRATA_WITH_NCCL

#include "parallel/nccl_ops.h"
#include "parallel/rank_fold.h"
#include "parallel/rank_fold_cuda.h"

namespace strata::parallel {
namespace {

// Device scratch allocated and freed in stream order, so that it needs no synchronization.
class StreamScratch {
 public:
  StreamScratch(cudaStream_t stream) : stream_(stream) {}
  ~StreamScratch() {
    if (memory_ != nullptr) cudaFreeAsync(memory_, stream_);
  }
  Status allocate(size_t bytes) {
    return CudaStatus(cudaMallocAsync(&memory_, bytes, stream_), "cudaMallocAsync");
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(memory_);
  }

 private:
  cudaStream_t stream_;
  void* memory_ = nullptr;
};

const char* Bytes(const void* p, size_t offset) { return static_cast<const char*>(p) + offset; }
char* Bytes(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

// Chunk p of send to rank p, chunk p of recv from rank p, as one NCCL group (NCCL allows a
// rank to send to itself inside a group). ncclGroupEnd runs even after a failed call.
Status AllToAll(const NcclChannel& ch, const void* send, void* recv, size_t bytes_per_rank) {
  Status status = NcclStatus(ncclGroupStart(), "ncclGroupStart");
  if (!status.ok()) return status;
  for (int peer = 0; peer < ch.size() && status.ok(); ++peer) {
    const size_t offset = static_cast<size_t>(peer) * bytes_per_rank;
    status = NcclStatus(
        ncclSend(Bytes(send, offset), bytes_per_rank, ncclInt8, peer, ch.comm(), ch.stream()),
        "ncclSend");
    if (!status.ok()) break;
    status = NcclStatus(
        ncclRecv(Bytes(recv, offset), bytes_per_rank, ncclInt8, peer, ch.comm(), ch.stream()),
        "ncclRecv");
  }
  const Status ended = NcclStatus(ncclGroupEnd(), "ncclGroupEnd");
  return status.ok() ? ended : status;
}

template <typename T>
Status ReduceScatterSum(const NcclChannel& ch, const T* send, T* recv, size_t recv_count) {
  if (recv_count == 0) return Status::Ok();
  StreamScratch scratch(ch.stream());
  STRATA_RETURN_IF_ERROR(scratch.allocate(recv_count * ch.size() * sizeof(T)));
  T* received = scratch.as<T>();
  STRATA_RETURN_IF_ERROR(AllToAll(ch, send, received, recv_count * sizeof(T)));
  return CudaStatus(LaunchRankFold(received, recv_count, ch.size(), recv, ch.stream()),
                    "rank fold kernel");
}

// The layout of mpi_ops.cc's AllReduceSum: [received: padded][folded: chunk][staging: padded,
// only when count % size != 0].
template <typename T>
Status AllReduceSum(const NcclChannel& ch, const T* send, T* recv, size_t count) {
  if (count == 0) return Status::Ok();
  const size_t chunk = PaddedChunkCount(count, ch.size());
  const size_t padded = chunk * ch.size();
  const bool pad = padded != count;
  StreamScratch scratch(ch.stream());
  STRATA_RETURN_IF_ERROR(scratch.allocate((padded + chunk + (pad ? padded : 0)) * sizeof(T)));
  T* received = scratch.as<T>();
  T* folded = received + padded;
  T* staging = folded + chunk;
  const T* source = send;
  if (pad) {
    STRATA_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(staging, send, count * sizeof(T), cudaMemcpyDeviceToDevice, ch.stream()),
        "cudaMemcpyAsync"));
    STRATA_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(staging + count, 0, (padded - count) * sizeof(T), ch.stream()),
                   "cudaMemsetAsync"));
    source = staging;
  }
  STRATA_RETURN_IF_ERROR(AllToAll(ch, source, received, chunk * sizeof(T)));
  STRATA_RETURN_IF_ERROR(CudaStatus(LaunchRankFold(received, chunk, ch.size(), folded, ch.stream()),
                                    "rank fold kernel"));
  T* gathered = pad ? staging : recv;
  STRATA_RETURN_IF_ERROR(NcclAllGather(ch, folded, gathered, chunk * sizeof(T)));
  if (!pad) return Status::Ok();
  return CudaStatus(
      cudaMemcpyAsync(recv, staging, count * sizeof(T), cudaMemcpyDeviceToDevice, ch.stream()),
      "cudaMemcpyAsync");
}

}  // namespace

Status NcclAllReduceSum(const NcclChannel& ch, const float* send, float* recv, size_t count) {
  return AllReduceSum(ch, send, recv, count);
}

Status NcclAllReduceSum(const NcclChannel& ch, const double* send, double* recv, size_t count) {
  return AllReduceSum(ch, send, recv, count);
}

Status NcclReduceScatterSum(const NcclChannel& ch, const float* send, float* recv,
                            size_t recv_count) {
  return ReduceScatterSum(ch, send, recv, recv_count);
}

Status NcclReduceScatterSum(const NcclChannel& ch, const double* send, double* recv,
                            size_t recv_count) {
  return ReduceScatterSum(ch, send, recv, recv_count);
}

Status NcclAllGather(const NcclChannel& ch, const void* send, void* recv, size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return Status::Ok();
  return NcclStatus(ncclAllGather(send, recv, bytes_per_rank, ncclInt8, ch.comm(), ch.stream()),
                    "ncclAllGather");
}

Status NcclBroadcast(const NcclChannel& ch, void* buffer, size_t bytes, int root) {
  if (bytes == 0) return Status::Ok();
  return NcclStatus(ncclBroadcast(buffer, buffer, bytes, ncclInt8, root, ch.comm(), ch.stream()),
                    "ncclBroadcast");
}

Status NcclSendRecv(const NcclChannel& ch, const void* send, size_t send_bytes, int to, void* recv,
                    size_t recv_bytes, int from) {
  Status status = NcclStatus(ncclGroupStart(), "ncclGroupStart");
  if (!status.ok()) return status;
  if (send_bytes > 0) {
    status =
        NcclStatus(ncclSend(send, send_bytes, ncclInt8, to, ch.comm(), ch.stream()), "ncclSend");
  }
  if (status.ok() && recv_bytes > 0) {
    status =
        NcclStatus(ncclRecv(recv, recv_bytes, ncclInt8, from, ch.comm(), ch.stream()), "ncclRecv");
  }
  const Status ended = NcclStatus(ncclGroupEnd(), "ncclGroupEnd");
  return status.ok() ? ended : status;
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_NCCL
