// The ranks of a `strata train` job (docs/parallel.md): which process this is, the Comm that
// joins it to the others, and what each rank writes.
//
// - Without a launcher (no mpirun) and --comm auto, the run is one rank exactly as before: no
//   Comm, no MPI.
// - Under mpirun, or with --comm mpi|nccl, every process makes the job's Comm: --comm auto takes
//   nccl on a cuda device and mpi otherwise. --comm nccl without a CUDA build and a GPU is one
//   line and exit 1.
// - Outputs (a contract): rank 0 alone prints progress and writes --log-json, --export and
//   --export-grads; --trace F becomes F with ".rank-<r>" before its extension and --nvme-dir D
//   becomes D/rank-<r> on every rank of a job of several; the other ranks log warnings and
//   errors only.
// - A rank whose run fails prints its error and ends the whole job (Comm::abort), so that no
//   rank waits on it until the collective timeout.
#pragma once

#include <memory>
#include <string>

#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/trainer.h"

namespace strata::tools {

struct TrainRanks {
  std::unique_ptr<parallel::Comm> comm;  // nullptr: one process without a launcher
  int rank = 0;
  int size = 1;
};

// Makes the job's Comm for `o` (--comm, --comm-timeout). Errors: InvalidArgument for a bad
// --comm or --comm-timeout, NotSupported for a backend this build or machine lacks, and the
// Comm's own (a peer that never starts: Timeout).
Result<TrainRanks> OpenTrainRanks(const TrainOptions& o);

// `path` with ".rank-<rank>" before its extension ("trace.json" -> "trace.rank-1.json").
std::string PathForRank(const std::string& path, int rank);

// Rank-specific paths of `o` for rank `rank` of `size`: --trace per rank, and each --nvme-dir D
// becomes D/rank-<rank> (created when missing; IoError when it cannot be). Sets o.ranks to
// `comm` (the trainer writes --export and --export-grads on rank 0 only).
Status ApplyRankOutputs(TrainOptions& o, parallel::Comm* comm, int rank, int size);

}  // namespace strata::tools
