// What a job's --ckpt-dir holds, read before any rank directory is made or any store opened, so
// that a run over another job's checkpoints is refused in words (docs/parallel.md, Checkpoints
// across ranks).
//
// A job of N > 1 ranks keeps rank r's checkpoint record in <--ckpt-dir>/rank-<r>/ (and its pages
// in <--nvme-dir>/rank-<r>/, tools/train_ranks.h); a one-process run keeps its record in
// <--ckpt-dir>/checkpoint.json itself. So the directory says which kind of job wrote it, and the
// record (scheduler/run_fingerprint.h) the grid.
//
// Rules:
// - --resume never creates anything: it continues the job that wrote --ckpt-dir, launched as
//   that job was (the same number of ranks, and the job's directories, not one rank's), or is
//   refused saying what the directory holds and how to resume it. With nothing to continue (no
//   record, or a record that lists no checkpoint) it is refused as well.
// - A new run (no --resume) is refused a --ckpt-dir that holds another job's checkpoints.
// Errors are InvalidArgument (exit 2) or NotFound, worded with the flags.
#pragma once

#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata::tools {

// `o` as given on the command line (before ApplyRankOutputs); `ranks` the job's size.
Status CheckCkptDirForJob(const TrainOptions& o, int ranks);

}  // namespace strata::tools
