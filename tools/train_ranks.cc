#include "tools/train_ranks.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <system_error>
#include <vector>

namespace strata::tools {

Result<TrainRanks> OpenTrainRanks(const TrainOptions& o) {
  if (o.grid.comm != "auto" && o.grid.comm != "mpi" && o.grid.comm != "nccl") {
    return Status::InvalidArgument("--comm must be auto, mpi or nccl, got '" + o.grid.comm + "'");
  }
  if (!(o.grid.comm_timeout_s > 0)) {
    return Status::InvalidArgument("--comm-timeout must be a positive number of seconds, got " +
                                   std::to_string(o.grid.comm_timeout_s));
  }
  TrainRanks ranks;
  const parallel::LaunchInfo launch = parallel::DetectLaunch();
  if (o.grid.comm == "auto" && !launch.under_mpi) return ranks;  // one rank, as before
  parallel::CommOptions co;
  co.timeout_s = o.grid.comm_timeout_s;
  const bool nccl = o.grid.comm == "nccl" || (o.grid.comm == "auto" && o.device == "cuda");
  co.backend = nccl ? parallel::CommBackend::kNccl : parallel::CommBackend::kMpi;
  Result<std::unique_ptr<parallel::Comm>> comm = parallel::CreateComm(co);
  if (!comm.ok()) {
    return comm.status().with_context(std::string("--comm ") + (nccl ? "nccl" : "mpi"));
  }
  ranks.comm = std::move(*comm);
  ranks.rank = ranks.comm->rank();
  ranks.size = ranks.comm->size();
  if (ranks.size > 1) {
    parallel::CommOptions eo;
    eo.backend = parallel::CommBackend::kMpi;
    eo.timeout_s = std::min(kExitAgreementSeconds, o.grid.comm_timeout_s);
    // Without it (an MPI that allows one Comm at a time), a failed rank aborts the job as before.
    Result<std::unique_ptr<parallel::Comm>> exit = parallel::CreateComm(eo);
    if (exit.ok()) ranks.exit = std::move(*exit);
  }
  return ranks;
}

FailedRankEnd AgreeOnFailure(TrainRanks& ranks, const Status& failure) {
  FailedRankEnd end;
  const bool collective_failed =
      failure.code() == StatusCode::kTimeout || failure.code() == StatusCode::kAborted;
  if (ranks.exit == nullptr || collective_failed || !ranks.exit->barrier().ok()) return end;
  // Every rank failed. The same words (a hash of code and message) are said once, by rank 0.
  const uint64_t mine =
      std::hash<std::string>{}(std::to_string(int(failure.code())) + failure.message());
  std::vector<uint64_t> all(size_t(ranks.size));
  if (!ranks.exit->all_gather(&mine, all.data(), sizeof mine).wait().ok()) return end;
  end.in_order = true;
  end.say = ranks.rank == 0 || all[size_t(ranks.rank)] != all[0];
  return end;
}

std::string PathForRank(const std::string& path, int rank) {
  const std::string tag = ".rank-" + std::to_string(rank);
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  const bool has_ext = dot != std::string::npos && dot > 0 &&
                       (slash == std::string::npos || dot > slash + 1);
  return has_ext ? path.substr(0, dot) + tag + path.substr(dot) : path + tag;
}

Status ApplyRankOutputs(TrainOptions& o, parallel::Comm* comm, int rank, int size) {
  o.grid.ranks = comm;
  if (size <= 1) return Status::Ok();
  if (!o.outputs.trace_path.empty()) o.outputs.trace_path = PathForRank(o.outputs.trace_path, rank);
  // Each rank's pages and checkpoint records live in its own directory of every --nvme-dir and
  // of --ckpt-dir, created when missing (Note [Checkpoints across ranks]); --resume creates
  // nothing (tools/resume_dirs.h).
  auto own = [&](std::string& dir, const char* flag) -> Status {
    dir += "/rank-" + std::to_string(rank);
    if (o.checkpoints.resume) return Status::Ok();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!ec) return Status::Ok();
    return Status::IoError(std::string(flag) + ": cannot create " + dir + " for rank " +
                           std::to_string(rank) + ": " + ec.message());
  };
  for (std::string& dir : o.budgets.nvme_dirs) STRATA_RETURN_IF_ERROR(own(dir, "--nvme-dir"));
  if (!o.checkpoints.dir.empty()) STRATA_RETURN_IF_ERROR(own(o.checkpoints.dir, "--ckpt-dir"));
  return Status::Ok();
}

}  // namespace strata::tools
