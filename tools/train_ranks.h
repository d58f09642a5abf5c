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
// - A failed job ends as Note [Ending a failed job] says: in order, with one line, when every
//   rank refused the run alike; else the failed rank prints its error and ends the whole job
//   (Comm::abort), so that no rank waits on it until the collective timeout.
//
// Note [Ending a failed job]
// Most refusals happen on every rank at once, at the same check (flags that differ between
// ranks, a checkpoint of another layout): each rank then has an error and none waits in a
// collective. If each aborted the job (MPI_Abort), OpenMPI would print its abort banner per rank
// and, for two at once, ORTE_ERROR_LOG lines about its own help messages (seen here with 2
// ranks). So a failed rank first waits, for at most kExitAgreementSeconds, at a barrier of the
// job's exit Comm: a second MPI Comm made at start and used for nothing else, so that it never
// meets a collective of the run. When every rank arrives, they all failed: they compare their
// messages, rank 0 prints its error (and each rank whose error differs prints its own), and every
// rank ends normally (MPI_Finalize) with its error's exit code; mpirun then reports the non-zero
// exit, the one text OpenMPI adds. When the barrier times out, some rank is still running (in a
// collective that waits for this one) or gone: this rank prints its error and aborts the job.
// A collective that failed (Timeout, Aborted) ends the job by abort at once.
#pragma once

#include <memory>
#include <string>

#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/train_options.h"

namespace strata::tools {

struct TrainRanks {
  std::unique_ptr<parallel::Comm> comm;  // nullptr: one process without a launcher
  std::unique_ptr<parallel::Comm> exit;  // Note [Ending a failed job]; nullptr: abort instead
  int rank = 0;
  int size = 1;
};

// How long failed ranks wait for each other at the exit barrier before one aborts the job.
inline constexpr double kExitAgreementSeconds = 10;

// How a rank whose run failed with `failure` ends (Note [Ending a failed job]). Collective on the
// exit Comm among failed ranks; a job of several ranks.
struct FailedRankEnd {
  bool in_order = false;  // every rank failed: end normally with the error's exit code
  bool say = true;        // this rank prints its error (rank 0, or an error unlike rank 0's)
};
FailedRankEnd AgreeOnFailure(TrainRanks& ranks, const Status& failure);

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
