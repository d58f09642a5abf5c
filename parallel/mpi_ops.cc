#ifdef STRATA_WITH_MPI

#include "parallel/mpi_ops.h"

#include <algorithm>
#include <cstring>

#include "parallel/mpi_byte_type.h"
#include "parallel/mpi_status.h"
#include "parallel/rank_fold.h"

namespace strata::parallel {
namespace {

// Rank r's send + r * bytes_per_rank goes to rank r; recv + r * bytes_per_rank comes from rank r.
Status AllToAll(MpiOpContext& ctx, const void* send, void* recv, size_t bytes_per_rank) {
  STRATA_ASSIGN_OR_RETURN(MpiByteType type, MpiByteType::Create(bytes_per_rank));
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Ialltoall(send, type.count(), type.type(), recv,
                                                 type.count(), type.type(), ctx.comm(), &request),
                                   "MPI_Ialltoall"));
  return ctx.wait(&request, 1);
}

// The chunks of every rank for this rank, folded in rank order into recv.
template <typename T>
Status ReduceScatterSum(MpiOpContext& ctx, const T* send, T* recv, size_t recv_count) {
  if (recv_count == 0) return Status::Ok();
  T* received = ctx.scratch<T>(recv_count * static_cast<size_t>(ctx.size()));
  STRATA_RETURN_IF_ERROR(AllToAll(ctx, send, received, recv_count * sizeof(T)));
  // send is not read after the all-to-all, which is why recv may lie inside it.
  FoldInRankOrder(received, recv_count, ctx.size(), recv);
  return Status::Ok();
}

// Scratch: [chunks received: padded][this rank's folded chunk: chunk][staging: padded, only
// when count is not a multiple of size: the zero-padded input, then the gathered output].
template <typename T>
Status AllReduceSum(MpiOpContext& ctx, const T* send, T* recv, size_t count) {
  if (count == 0) return Status::Ok();
  const size_t chunk = PaddedChunkCount(count, ctx.size());
  const size_t padded = chunk * static_cast<size_t>(ctx.size());
  const bool pad = padded != count;
  T* received = ctx.scratch<T>(padded + chunk + (pad ? padded : 0));
  T* folded = received + padded;
  T* staging = folded + chunk;
  const T* source = send;
  if (pad) {
    std::memcpy(staging, send, count * sizeof(T));
    std::fill(staging + count, staging + padded, T(0));
    source = staging;
  }
  STRATA_RETURN_IF_ERROR(AllToAll(ctx, source, received, chunk * sizeof(T)));
  FoldInRankOrder(received, chunk, ctx.size(), folded);
  // send has been read in full: the gather may write recv even when recv == send.
  T* gathered = pad ? staging : recv;
  STRATA_RETURN_IF_ERROR(MpiAllGather(ctx, folded, gathered, chunk * sizeof(T)));
  if (pad) std::memcpy(recv, staging, count * sizeof(T));
  return Status::Ok();
}

}  // namespace

Status MpiAllReduceSum(MpiOpContext& ctx, const float* send, float* recv, size_t count) {
  return AllReduceSum(ctx, send, recv, count);
}

Status MpiAllReduceSum(MpiOpContext& ctx, const double* send, double* recv, size_t count) {
  return AllReduceSum(ctx, send, recv, count);
}

Status MpiReduceScatterSum(MpiOpContext& ctx, const float* send, float* recv, size_t recv_count) {
  return ReduceScatterSum(ctx, send, recv, recv_count);
}

Status MpiReduceScatterSum(MpiOpContext& ctx, const double* send, double* recv, size_t recv_count) {
  return ReduceScatterSum(ctx, send, recv, recv_count);
}

Status MpiAllGather(MpiOpContext& ctx, const void* send, void* recv, size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(MpiByteType type, MpiByteType::Create(bytes_per_rank));
  const bool in_place = send == static_cast<const std::byte*>(recv) +
                                    static_cast<size_t>(ctx.rank()) * bytes_per_rank;
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_RETURN_IF_ERROR(
      MpiStatus(MPI_Iallgather(in_place ? MPI_IN_PLACE : send, type.count(), type.type(), recv,
                               type.count(), type.type(), ctx.comm(), &request),
                "MPI_Iallgather"));
  return ctx.wait(&request, 1);
}

Status MpiBroadcast(MpiOpContext& ctx, void* buffer, size_t bytes, int root) {
  if (bytes == 0) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(MpiByteType type, MpiByteType::Create(bytes));
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_RETURN_IF_ERROR(MpiStatus(
      MPI_Ibcast(buffer, type.count(), type.type(), root, ctx.comm(), &request), "MPI_Ibcast"));
  return ctx.wait(&request, 1);
}

Status MpiSend(MpiOpContext& ctx, const void* buffer, size_t bytes, int peer, int tag) {
  STRATA_ASSIGN_OR_RETURN(MpiByteType type, MpiByteType::Create(bytes));
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_RETURN_IF_ERROR(MpiStatus(
      MPI_Isend(buffer, type.count(), type.type(), peer, tag, ctx.comm(), &request), "MPI_Isend"));
  return ctx.wait(&request, 1);
}

namespace {

// A message shorter than the receiver expected is the caller's mismatch (MPI only reports the
// longer case, as truncation).
Status CheckReceived(const MPI_Status& status, const MpiByteType& type, size_t bytes) {
  MPI_Count received = 0;
  STRATA_RETURN_IF_ERROR(
      MpiStatus(MPI_Get_elements_x(&status, type.type(), &received), "MPI_Get_elements_x"));
  if (static_cast<size_t>(received) == bytes) return Status::Ok();
  return Status::InvalidArgument("received " + std::to_string(received) + " bytes, expected " +
                                 std::to_string(bytes) + ": the sender's size differs");
}

}  // namespace

Status MpiRecv(MpiOpContext& ctx, void* buffer, size_t bytes, int peer, int tag) {
  STRATA_ASSIGN_OR_RETURN(MpiByteType type, MpiByteType::Create(bytes));
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_RETURN_IF_ERROR(MpiStatus(
      MPI_Irecv(buffer, type.count(), type.type(), peer, tag, ctx.comm(), &request), "MPI_Irecv"));
  MPI_Status status;
  STRATA_RETURN_IF_ERROR(ctx.wait(&request, 1, &status));
  return CheckReceived(status, type, bytes);
}

Status MpiSendRecv(MpiOpContext& ctx, const void* send, size_t send_bytes, int to, void* recv,
                   size_t recv_bytes, int from, int tag) {
  STRATA_ASSIGN_OR_RETURN(MpiByteType send_type, MpiByteType::Create(send_bytes));
  STRATA_ASSIGN_OR_RETURN(MpiByteType recv_type, MpiByteType::Create(recv_bytes));
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  // The receive first, so that the peer's message never has to wait in an unexpected queue.
  STRATA_RETURN_IF_ERROR(MpiStatus(
      MPI_Irecv(recv, recv_type.count(), recv_type.type(), from, tag, ctx.comm(), &requests[0]),
      "MPI_Irecv"));
  const Status sent = MpiStatus(
      MPI_Isend(send, send_type.count(), send_type.type(), to, tag, ctx.comm(), &requests[1]),
      "MPI_Isend");
  if (!sent.ok()) {
    ctx.abandon(requests, 1);
    return sent;
  }
  MPI_Status statuses[2];
  STRATA_RETURN_IF_ERROR(ctx.wait(requests, 2, statuses));
  return CheckReceived(statuses[0], recv_type, recv_bytes);
}

Status MpiBarrier(MpiOpContext& ctx) {
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Ibarrier(ctx.comm(), &request), "MPI_Ibarrier"));
  return ctx.wait(&request, 1);
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_MPI
