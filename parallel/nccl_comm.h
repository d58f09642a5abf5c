// The NCCL backend of Comm (comm.h): device buffers, ops on one CUDA stream; an op on host
// buffers goes to the MPI bootstrap instead (a RoutedComm, routed_comm.h).
//
// - Bootstrap over MPI: the backend owns an MPI Comm (mpi_comm.h) that carries the NCCL unique
//   id from rank 0, finds each rank's local rank (ranks with the same host name) to pick GPU
//   (local rank % visible GPUs), and runs barrier() and abort().
// - Deterministic reductions without NCCL's reductions: an all-to-all of grouped ncclSend /
//   ncclRecv, then a rank-order fold kernel (rank_fold_cuda.h); all-reduce adds an
//   ncclAllGather of the folded chunks. Scratch is stream-ordered (cudaMallocAsync).
// - Timeouts: a work's wait() polls its CUDA event and NCCL's async error; when timeout_s
//   passes first, it aborts the NCCL communicator (which unblocks the stream) and the Comm is
//   broken from then on.
// - Threads: issue from one thread at a time (the issuing thread's current device is set to the
//   Comm's GPU); waits from any thread.
// Built only with CUDA, NCCL and MPI (STRATA_WITH_NCCL); otherwise, and on a machine without a
// GPU, CreateNcclComm returns kNotSupported.
#pragma once

#include <memory>

#include "core/util/status.h"
#include "parallel/comm.h"

namespace strata::parallel {

Result<std::unique_ptr<Comm>> CreateNcclComm(const CommOptions& options);

}  // namespace strata::parallel
