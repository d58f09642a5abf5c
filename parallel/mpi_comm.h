// The MPI backend of Comm (comm.h): host buffers, MPI_BYTE transfers, folds in C++.
//
// Threads: each MPI Comm owns one comm thread ("mpi-comm") that runs its ops one at a time in
// issue order (a tbb::concurrent_bounded_queue between the issuing thread and it) and is the
// only thread that calls MPI for it; its works complete on that thread. MPI_Init_thread runs on
// the thread that creates the first Comm, MPI_Finalize on the thread that destroys the last
// (MpiLifetime). abort() calls MPI_Abort on the calling thread: below MPI_THREAD_MULTIPLE that
// is outside MPI's threading rules, but it is the emergency exit and OpenMPI honours it.
//
// After a failed op, MPI may still read or write that op's buffers (a collective's request
// cannot be cancelled): keep them allocated and end the job with abort().
// Without MPI (STRATA_WITH_MPI unset) CreateMpiComm returns kNotSupported.
#pragma once

#include <memory>

#include "core/util/status.h"
#include "parallel/comm.h"

namespace strata::parallel {

Result<std::unique_ptr<Comm>> CreateMpiComm(const CommOptions& options);

}  // namespace strata::parallel
