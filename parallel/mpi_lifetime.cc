#ifdef STRATA_WITH_MPI

#include "parallel/mpi_lifetime.h"

#include <mpi.h>

#include <mutex>

#include "core/util/log.h"
#include "parallel/mpi_status.h"

namespace strata::parallel {
namespace {

// Which MpiLifetime is live, and whether this process has started MPI. Guarded by mu.
struct Registry {
  std::mutex mu;
  std::weak_ptr<MpiLifetime> live;
  bool started_here = false;  // set by the first MPI_Init_thread; MPI cannot start again
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

const char* ThreadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

}  // namespace

Result<std::shared_ptr<MpiLifetime>> MpiLifetime::Acquire() {
  Registry& registry = TheRegistry();
  std::lock_guard lock(registry.mu);
  if (std::shared_ptr<MpiLifetime> live = registry.live.lock()) {
    if (live->thread_level() < MPI_THREAD_MULTIPLE) {
      return Status::FailedPrecondition(
          std::string("MPI provides only ") + ThreadLevelName(live->thread_level()) +
          ", so only one MPI comm (one thread calling MPI) may exist at a time; destroy the "
          "other comm first");
    }
    return live;
  }
  // An expired `live` whose destructor has not run yet is ending too: MPI_Finalize is coming.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (registry.started_here || finalized) {
    return Status::FailedPrecondition(
        "MPI has ended in this process (the last MPI comm was destroyed) and cannot start "
        "again; keep one comm alive for the life of the process");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  int level = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&level);
  } else {
    STRATA_RETURN_IF_ERROR(MpiStatus(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &level),
                                     "MPI_Init_thread"));
    registry.started_here = true;
    Logger("parallel")->debug("MPI started, thread level {}", ThreadLevelName(level));
  }
  auto lifetime = std::make_shared<MpiLifetime>(Key(), !initialized, level);
  registry.live = lifetime;
  return lifetime;
}

MpiLifetime::~MpiLifetime() {
  std::lock_guard lock(TheRegistry().mu);
  if (initialized_here_) MPI_Finalize();
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_MPI
