// What goes wrong in one attempt of a `strata stress` configuration (stress/stress_scenario.cc):
// a disk fault for STRATA_INJECT_FAULTS with the error texts it may cause, a stop signal, a flipped
// byte in the newest checkpoint, or the real disk filling up mid-run, drawn from the
// configuration's random stream.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace strata::stress {

struct DiskFault {
  std::string spec;                      // for STRATA_INJECT_FAULTS
  std::vector<std::string> error_texts;  // what an error it causes must say (one of them)
  bool timing_only = false;              // latency / short I/O: must never fail a run
};

// One disturbed attempt: a flipped byte in the newest checkpoint before it (alone), the disk
// under the store filled once some steps are logged (alone), or a disk fault, a stop signal, or
// both.
struct Disturbance {
  bool rot = false;
  bool fill = false;
  bool rank_change = false;  // a resume as 2 ranks over the run's directories (alone)
  std::optional<DiskFault> fault;
  int signal = 0;  // SIGKILL or SIGTERM, sent once some steps are logged
};

// lo..hi, uniform.
long Uniform(std::mt19937_64& rng, long lo, long hi);

// Two to four disturbed attempts: the first is stopped by a signal (with a disk fault half the
// time); then a fault alone (40%), a signal alone (30%), both (15%) or a flipped byte (15%).
// With probability `fill_odds` (0 where the disk cannot be loop-mounted) the first becomes a
// disk fill instead: the first attempt always runs, with the whole run ahead of it. At least
// one has a disk fault or a fill. With probability `rank_change_odds` (0 without mpirun) one
// more, after the first, is a rank-count change on resume.
std::vector<Disturbance> DrawDisturbances(std::mt19937_64& rng, double fill_odds,
                                          double rank_change_odds = 0);

}  // namespace strata::stress
