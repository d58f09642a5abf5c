// MpiLifetime: MPI's start and end in this process, shared by the MPI Comms that use it.
//
// The first Acquire() initializes MPI (MPI_Init_thread, asking for MPI_THREAD_MULTIPLE), unless
// something else in the process already did; when the last holder lets go, MPI is finalized if
// Acquire initialized it. MPI cannot start twice in one process, so an Acquire after that fails.
// This object and the registry inside Acquire are the only process-wide state parallel/ keeps
// about MPI.
//
// Threads: Acquire is thread-safe. MPI_Finalize runs on the thread that drops the last holder;
// with an MPI that provides less than MPI_THREAD_MULTIPLE, that and MPI_Init should be the same
// thread (the main thread), which is what a trainer that creates and destroys its Comm in main()
// does.
// Only compiled with MPI (STRATA_WITH_MPI).
#pragma once

#include <memory>

#include "core/util/status.h"

namespace strata::parallel {

class MpiLifetime {
 public:
  // kFailedPrecondition when MPI has ended in this process, or when a holder exists and MPI
  // provides less than MPI_THREAD_MULTIPLE (only one comm thread may call MPI then).
  static Result<std::shared_ptr<MpiLifetime>> Acquire();

  // Public for make_shared only: Key is private, so only Acquire can call it.
  struct Key {
   private:
    friend class MpiLifetime;
    Key() = default;
  };
  MpiLifetime(Key, bool initialized_here, int thread_level)
      : initialized_here_(initialized_here), thread_level_(thread_level) {}
  ~MpiLifetime();
  MpiLifetime(const MpiLifetime&) = delete;
  MpiLifetime& operator=(const MpiLifetime&) = delete;

  // The thread level MPI provides (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE).
  int thread_level() const { return thread_level_; }

 private:
  const bool initialized_here_;  // MPI_Finalize at the end only if we called MPI_Init_thread
  const int thread_level_;
};

}  // namespace strata::parallel
