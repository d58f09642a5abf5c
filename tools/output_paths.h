// The files `strata train` writes, checked before anything is read, planned or trained: a
// typo in an output path costs one line before step 1, not a whole run's work after the last
// step, and no output can overwrite an input.
//
// For each output file (--log-json, --export, --export-grads, --trace):
// - its directory exists (NotFound) and is writable (FailedPrecondition): every writer may
//   write a temporary file beside it and rename it over the path;
// - it is not a directory (InvalidArgument); an existing non-regular file (/dev/null, a pipe)
//   is accepted when it is writable;
// - it is not an input: --data, --init or --ckpt-dir's checkpoint record, compared by device
//   and inode, so links and relative paths are caught (InvalidArgument);
// - it does not lie in an --nvme-dir, which belongs to the page store (InvalidArgument);
// - no two outputs are the same file (InvalidArgument).
// --ckpt-dir, when given: a writable directory, or a path whose parent is one (it is created).
//
// Threads: stat and access only; call from the command's thread.
#pragma once

#include <string>

#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata::tools {

// `log_json`: the --log-json path ("" when not given).
Status CheckTrainOutputs(const TrainOptions& options, const std::string& log_json);

}  // namespace strata::tools
