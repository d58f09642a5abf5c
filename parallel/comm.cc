#include "parallel/comm.h"

#include <cmath>
#include <string>

#include "parallel/local_comm.h"
#include "parallel/mpi_comm.h"
#include "parallel/nccl_comm.h"
#include "parallel/work_state.h"

namespace strata::parallel {

const char* CommBackendName(CommBackend backend) {
  switch (backend) {
    case CommBackend::kLocal:
      return "local";
    case CommBackend::kMpi:
      return "mpi";
    case CommBackend::kNccl:
      return "nccl";
  }
  return "unknown";
}

CommWork::CommWork() : CommWork(Done(Status::Ok())) {}

CommWork::CommWork(std::shared_ptr<WorkState> state) : state_(std::move(state)) {
  STRATA_CHECK(state_ != nullptr) << "CommWork without a state";
}

CommWork CommWork::Done(Status status) {
  auto flag = std::make_shared<CompletionFlag>();
  flag->complete(std::move(status));
  return CommWork(std::move(flag));
}

Status CommWork::wait() const { return state_->wait(); }

bool CommWork::done() const { return state_->done(); }

Result<std::unique_ptr<Comm>> CreateComm(const CommOptions& options) {
  if (!(options.timeout_s > 0) || !std::isfinite(options.timeout_s)) {
    return Status::InvalidArgument("comm timeout must be a positive number of seconds, got " +
                                   std::to_string(options.timeout_s));
  }
  switch (options.backend) {
    case CommBackend::kLocal:
      return CreateLocalComm();
    case CommBackend::kMpi:
      return CreateMpiComm(options);
    case CommBackend::kNccl:
      return CreateNcclComm(options);
  }
  return Status::InvalidArgument("unknown comm backend " +
                                 std::to_string(static_cast<int>(options.backend)));
}

}  // namespace strata::parallel
