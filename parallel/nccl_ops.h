// The NCCL backend's ops: each enqueues its kernels on the channel's stream and returns at once
// (the caller records the completion event). Internal to nccl_comm_cuda.cc; only compiled with
// STRATA_WITH_NCCL. Same decompositions as the MPI backend (mpi_ops.h): reductions are an
// all-to-all of grouped ncclSend/ncclRecv plus a rank-order fold kernel, never NCCL's own
// reductions (Note [Deterministic reductions] in docs/parallel.md). Errors are the enqueue's
// (bare; the caller words them for the op).
#pragma once

#include <cstddef>

#include "core/util/status.h"
#include "parallel/nccl_channel.h"

namespace strata::parallel {

Status NcclAllReduceSum(const NcclChannel& ch, const float* send, float* recv, size_t count);
Status NcclAllReduceSum(const NcclChannel& ch, const double* send, double* recv, size_t count);
Status NcclReduceScatterSum(const NcclChannel& ch, const float* send, float* recv,
                            size_t recv_count);
Status NcclReduceScatterSum(const NcclChannel& ch, const double* send, double* recv,
                            size_t recv_count);
Status NcclAllGather(const NcclChannel& ch, const void* send, void* recv, size_t bytes_per_rank);
Status NcclBroadcast(const NcclChannel& ch, void* buffer, size_t bytes, int root);
// send_bytes == 0 or recv_bytes == 0 leaves that direction out; one NCCL group either way.
Status NcclSendRecv(const NcclChannel& ch, const void* send, size_t send_bytes, int to, void* recv,
                    size_t recv_bytes, int from);

}  // namespace strata::parallel
