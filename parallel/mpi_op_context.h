// MpiOpContext: what the body of one MPI op (mpi_ops.h) gets from the comm thread that runs it:
// the communicator, this rank's place, the op's deadline and the comm's scratch memory.
//
// Threads: lives on the comm thread for the duration of one op; nothing here is shared.
// Only compiled with MPI (STRATA_WITH_MPI).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/util/status.h"

namespace strata::parallel {

// Grow-only host memory that the ops of one comm reuse (never shrunk, never zeroed).
class HostScratch {
 public:
  // At least `bytes` bytes, aligned for any element type; valid until the next call.
  std::byte* get(size_t bytes);
  // Gives up the memory without freeing it: MPI may still write to it for an op that was
  // abandoned after a timeout (freeing it could corrupt whatever is allocated there next).
  void leak();

 private:
  std::unique_ptr<std::byte[]> memory_;
  size_t bytes_ = 0;
};

class MpiOpContext {
 public:
  using Clock = std::chrono::steady_clock;

  MpiOpContext(MPI_Comm comm, int rank, int size, Clock::time_point deadline, HostScratch& scratch,
               std::vector<MPI_Request>& abandoned)
      : comm_(comm),
        rank_(rank),
        size_(size),
        deadline_(deadline),
        scratch_(scratch),
        abandoned_(abandoned) {}

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Polls the requests with MPI_Testall until all complete, backing off from yields to short
  // sleeps so that a waiting rank leaves the core to its peers. Returns OK; a bare kTimeout
  // (the comm thread words it) when the deadline passes first, after moving the requests still
  // pending to the comm's abandoned list (a collective's request cannot be cancelled); or MPI's
  // error. `statuses` (count entries) receives the requests' statuses, or MPI_STATUSES_IGNORE.
  Status wait(MPI_Request* requests, int count, MPI_Status* statuses = MPI_STATUSES_IGNORE);

  // Hands pending requests to the comm's abandoned list (an op that gives up on them).
  void abandon(MPI_Request* requests, int count);

  // The comm's scratch as `count` elements of T; valid for the rest of this op.
  template <typename T>
  T* scratch(size_t count) {
    return reinterpret_cast<T*>(scratch_.get(count * sizeof(T)));
  }

 private:
  MPI_Comm comm_;
  int rank_;
  int size_;
  Clock::time_point deadline_;
  HostScratch& scratch_;
  std::vector<MPI_Request>& abandoned_;
};

}  // namespace strata::parallel
