// One configuration of `strata stress`, run to a verdict (Note [Stress outcomes] in
// stress/stress_judge.h): the in-memory reference, then paged attempts in one scratch directory,
// each disturbed by one event, then a last undisturbed attempt:
//   disk fault  the attempt runs with STRATA_INJECT_FAULTS=SPEC in its environment (EIO, ENOSPC,
//               EAGAIN, latency, short I/O): it must finish, or stop with exit 1 and one
//               `strata: error:` line that names the fault;
//   kill        SIGKILL or SIGTERM once the attempt has logged a random number of steps: it must
//               end by that signal (or exit 128 + it after a graceful stop);
//   rot         one byte of a page of the newest checkpoint is flipped (when two or more exist):
//               the next attempt must stop with a checksum error, and the --resume-from STEP it
//               suggests must recover;
//   disk fill   the configuration's store and checkpoints live on a small loop-mounted ext4 of
//               its own, and the driver fills it once the first attempt has logged a random
//               number of steps (fewer than its last checkpoint's): the attempt must stop with
//               exit 1 and one `strata: error:` line with ENOSPC's message (or finish), and after
//               the space is freed --resume must go on as if nothing happened (Note [Disk fills]
//               in stress_damage.cc).
//   ranks       the run resumed as a job of 2 ranks under mpirun over its own directories (once
//               its checkpoint record exists): refused in order with exit 2 and one line naming a
//               one-process run, nothing created (stress/stress_rank_change.h).
// Every attempt after the first passes --resume (or that --resume-from). The configuration then
// passes when the last attempt finished with the reference's losses and weights and every page
// of every checkpoint left in the store verifies.
#pragma once

#include <chrono>
#include <string>

#include "core/util/status.h"
#include "stress/stress_config.h"

namespace strata::stress {

struct StressCounters {
  long configurations = 0;  // run to a verdict
  long skipped = 0;         // budgets the planner refused (never run)
  long faults_injected = 0;   // disk faults that hit a request, flipped bytes
  long faults_detected = 0;   // ... that stopped their run with the expected one-line error
  long faults_recovered = 0;  // ... after which the configuration ended bit-identical
  long kills = 0;             // SIGKILL/SIGTERM that stopped a run
  long disk_fills = 0;        // disks filled up under a running child
  long rank_changes = 0;      // resumes as 2 ranks refused as they must be
  long resumes = 0;           // attempts that continued from a checkpoint
  long pages_verified = 0;    // checkpoint pages read back with their checksums
  long data_lost = 0;         // configurations that could not finish, or lost steps
  long mismatches = 0;        // losses and weight files that differ from the reference
  long failures = 0;  // runs that crashed, hung, or failed without the expected error

  void add(const StressCounters& o);
};

struct StressRunOptions {
  std::string binary;  // the strata binary for children
  std::string root;    // scratch root; each configuration gets root/config-<index>
  // No new event once this has passed: the configuration goes straight to its last attempt.
  std::chrono::steady_clock::time_point deadline;
  // Testing the checker: "lr" runs the paged attempts with another --lr, "weights" flips a byte
  // of the exported weights before they are compared; "" does neither.
  std::string sabotage;
  double child_timeout_s = 120;  // a child still running after this is a hang
  // Chance that a configuration draws a disk fill; 0 where loop mounts are not possible.
  double fill_odds = 0;
  // mpirun, and the chance that a configuration draws a rank-count change on resume (0 without).
  std::string mpirun;
  double rank_change_odds = 0;
};

struct StressConfigResult {
  bool passed = false;
  bool skipped = false;
  std::string progress;  // one line for stderr
  std::string report;    // on failure: the seed, command lines, outcomes and problems
};

// Runs configuration `c`, adding what happened to `*counters`. Errors are the driver's own
// (scratch space, spawning); everything a child does is in the result and the counters.
Result<StressConfigResult> RunStressConfiguration(const StressConfig& c,
                                                  const StressRunOptions& options,
                                                  StressCounters* counters);

}  // namespace strata::stress
