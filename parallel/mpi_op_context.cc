#ifdef STRATA_WITH_MPI

#include "parallel/mpi_op_context.h"

#include <thread>

#include "parallel/mpi_status.h"

namespace strata::parallel {
namespace {

// Polls before the first sleep: a collective among ranks that are all ready usually finishes
// within these, and OpenMPI progresses non-blocking collectives only inside MPI calls, so
// sleeping early would stretch every round of a large all-to-all.
constexpr int kYieldPolls = 2000;
constexpr auto kPollSleep = std::chrono::microseconds(50);

}  // namespace

std::byte* HostScratch::get(size_t bytes) {
  if (bytes > bytes_) {
    memory_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    bytes_ = bytes;
  }
  return memory_.get();
}

void HostScratch::leak() {
  static_cast<void>(memory_.release());  // deliberate: see the header
  bytes_ = 0;
}

Status MpiOpContext::wait(MPI_Request* requests, int count, MPI_Status* statuses) {
  for (int polls = 0;; ++polls) {
    int complete = 0;
    const int code = MPI_Testall(count, requests, &complete, statuses);
    if (code != MPI_SUCCESS) {
      abandon(requests, count);
      return MpiStatus(code, "MPI_Testall");
    }
    if (complete) return Status::Ok();
    if (Clock::now() >= deadline_) {
      abandon(requests, count);
      return Status::Timeout("deadline passed");
    }
    if (polls < kYieldPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollSleep);
    }
  }
}

void MpiOpContext::abandon(MPI_Request* requests, int count) {
  for (int i = 0; i < count; ++i) {
    if (requests[i] != MPI_REQUEST_NULL) abandoned_.push_back(requests[i]);
  }
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_MPI
