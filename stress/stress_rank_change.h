// A rank-count change on resume, one of `strata stress`'s disturbances (stress/stress_scenario.h):
// the configuration's one-process run resumed as a job of 2 ranks under mpirun, over the same
// directories. Resuming under another layout is not built, so it must be refused in order: exit
// 2, one `strata: error:` line saying a one-process run wrote them, nothing created in them
// (issue 29: it used to make rank-0/ and rank-1/ stores inside them and start over, exit 0).
//
// Threads: one thread; blocks until mpirun has ended.
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"
#include "stress/stress_judge.h"

namespace strata::stress {

// `mpirun` on PATH, or "" where there is none (the soak then draws no rank changes).
std::string FindMpirun();

struct RankChangeRun {
  std::string command;  // for the failure report
  std::string outcome;  // how it ended, with its error line
  std::string problem;  // "" when it was refused as it must be
};

// Runs `mpirun -np 2 binary paged_args... --dp 2 --resume` (output to `output_path`, killed after
// `timeout_s`) and judges it. `ckpt_dir` and `nvme_dirs` are the one-process run's: no rank-<r>
// directory may appear in them. Errors: spawning or waiting failed.
Result<RankChangeRun> ResumeUnderTwoRanks(const std::string& mpirun, const std::string& binary,
                                          const std::vector<std::string>& paged_args,
                                          const std::string& ckpt_dir,
                                          const std::vector<std::string>& nvme_dirs,
                                          const std::string& output_path, double timeout_s);

}  // namespace strata::stress
