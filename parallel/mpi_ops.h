// The bodies of the MPI backend's ops, run one at a time on the comm thread (mpi_comm.cc).
//
// Each starts non-blocking MPI calls and waits for them through ctx.wait, so that a peer that
// never joins gives kTimeout instead of a hang. Only MPI_BYTE data moves through MPI: the sums
// are folded here, in rank order (Note [Deterministic reductions] in docs/parallel.md):
//   reduce-scatter = an all-to-all of the chunks, then this rank folds the size() chunks it
//                    received, in rank order;
//   all-reduce     = that reduce-scatter over chunks padded to ceil(count / size), then an
//                    all-gather of the folded chunks.
// Arguments were checked when the op was issued (op_status.h). Errors are bare (MPI's message
// or kTimeout); the comm thread adds which op, on which rank.
// Only compiled with MPI (STRATA_WITH_MPI).
#pragma once

#include <cstddef>

#include "core/util/status.h"
#include "parallel/mpi_op_context.h"

namespace strata::parallel {

Status MpiAllReduceSum(MpiOpContext& ctx, const float* send, float* recv, size_t count);
Status MpiAllReduceSum(MpiOpContext& ctx, const double* send, double* recv, size_t count);
Status MpiReduceScatterSum(MpiOpContext& ctx, const float* send, float* recv, size_t recv_count);
Status MpiReduceScatterSum(MpiOpContext& ctx, const double* send, double* recv, size_t recv_count);
Status MpiAllGather(MpiOpContext& ctx, const void* send, void* recv, size_t bytes_per_rank);
Status MpiBroadcast(MpiOpContext& ctx, void* buffer, size_t bytes, int root);
Status MpiSend(MpiOpContext& ctx, const void* buffer, size_t bytes, int peer, int tag);
// Fails when the sender sent fewer bytes than `bytes` (more is MPI's truncation error).
Status MpiRecv(MpiOpContext& ctx, void* buffer, size_t bytes, int peer, int tag);
Status MpiSendRecv(MpiOpContext& ctx, const void* send, size_t send_bytes, int to, void* recv,
                   size_t recv_bytes, int from, int tag);
Status MpiBarrier(MpiOpContext& ctx);

}  // namespace strata::parallel
