// ConfigRun: one configuration of `strata stress` carried out (stress/stress_scenario.h says
// what it does). Shared by stress_scenario.cc (the reference, the attempts, the verdict) and
// stress_damage.cc (the disturbances that damage the store: rot, a disk fill, a rank change).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/util/sizes.h"
#include "core/util/status.h"
#include "stress/stress_child.h"
#include "stress/stress_disk.h"
#include "stress/stress_disturbance.h"
#include "stress/stress_pages.h"
#include "stress/stress_scenario.h"

namespace strata::stress {

// The small disk a configuration that draws a disk fill keeps its store on (Note [Disk fills]
// in stress_damage.cc).
inline constexpr uint64_t kDiskBytes = 256 * kMiB;

// Whether an error line names a checksum failure.
bool NamesChecksumError(const std::string& line);
// How a child ended, in words ("exit 1", "ended by signal 9", "hung: ...").
std::string DescribeExit(const ChildRun& run);


class ConfigRun {
 public:
  ConfigRun(const StressConfig& c, const StressRunOptions& o)
      : c_(c),
        o_(o),
        rng_(c.seed ^ 0x5eedULL),
        dir_(o.root + "/config-" + std::to_string(c.index)) {}

  Result<StressConfigResult> run(StressCounters* counters);

 private:
  struct Attempt {
    std::string command;
    std::string outcome;
  };

  Status prepare(const std::vector<Disturbance>& draws);
  Status run_reference();
  // One paged attempt; a non-empty `fault_spec` is its STRATA_INJECT_FAULTS (stress/fault_spec.h).
  Result<ChildRun> run_paged(const std::string& fault_spec, StopPlan stop);
  Status disturb(const Disturbance& d);
  StopPlan draw_stop(int signal);
  void judge(const Disturbance& d, const ChildRun& run);
  Status rot();
  Status change_ranks();
  Status fill_disk();
  void judge_fill(const ChildRun& run, bool filled);
  Status finish_run();
  void verdict();
  void fail(const std::string& problem);
  bool still_rotted(const std::string& error_line) const;
  StressConfigResult outcome() const;

  const StressConfig c_;
  const StressRunOptions o_;
  std::mt19937_64 rng_;
  const std::string dir_;
  std::string store_root_;            // holds the NVMe dirs and --ckpt-dir: dir_ or disk_
  std::unique_ptr<StressDisk> disk_;  // when a disk fill was drawn (Note [Disk fills])
  bool used_disk_ = false;
  std::string data_;                // the token file, when not builtin
  std::vector<std::string> paged_;  // the flags of every paged attempt
  std::map<long, std::string> ref_losses_;
  std::string ref_weights_;
  std::string ref_command_;
  std::vector<std::map<long, std::string>> losses_;  // per attempt
  std::vector<Attempt> attempts_;
  std::vector<RottedPage> rotted_;
  long resume_from_ = -1;  // the next attempt's --resume-from, when an error suggested one
  long max_logged_ = 0;    // the highest step any attempt logged
  long pending_ = 0;       // injected faults that count as recovered if the configuration passes
  bool finished_ = false;  // an attempt ran to the end (exit 0)
  bool stop_events_ = false;
  std::vector<std::string> events_;  // short texts for the progress line
  std::vector<std::string> problems_;
  StressCounters n_;
};

}  // namespace strata::stress
