// `strata train --inject-faults SPEC`: a hidden flag through which `strata stress` (and tests)
// make a child training process's NVMe tier misbehave (storage/fault_injector.h). Not for users:
// CLI11's group "" keeps it out of --help.
//
// SPEC is a comma-separated list of faults, armed before the run opens its NVMe tier:
//   eio-after=N          the N-th I/O request of the run (N >= 1, counted from the store's open)
//                        fails with EIO
//   enospc-after=BYTES   once BYTES (a size: 0, 4096, 64K, 1M) have been written, every further
//                        write fails with ENOSPC
//   eagain=N             the next N requests fail with EAGAIN (the engines retry them)
//   latency-us=N         every transfer piece completes no sooner than N microseconds after issue
//   short-io             every request of 8 KiB or more moves half its bytes (short reads/writes)
// e.g. `--inject-faults eio-after=40,latency-us=200`. A bad SPEC is InvalidArgument naming
// --inject-faults (exit 2).
//
// When the process ends, an armed InjectedFaults prints one line on stderr:
// `strata: inject-faults: N requests failed` (N = FaultInjector::injected()), so that the parent
// knows whether an armed fault ever fired.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "core/util/status.h"
#include "storage/fault_injector.h"

namespace strata {
struct TrainOptions;
}  // namespace strata

namespace strata::stress {

// Arms `faults` as SPEC says (see above). On error nothing is armed.
Status ParseFaultSpec(std::string_view spec, storage::FaultInjector* faults);

// The --inject-faults flag of one command: the SPEC text and the injector it arms. Must outlive
// the Trainer that borrows the injector. One thread.
class InjectedFaults {
 public:
  InjectedFaults() = default;
  InjectedFaults(const InjectedFaults&) = delete;
  InjectedFaults& operator=(const InjectedFaults&) = delete;
  // Prints the `inject-faults:` line when armed.
  ~InjectedFaults();

  // Adds the hidden --inject-faults option to `cmd`.
  void add_option(CLI::App* cmd);
  // Parses the SPEC (if one was given) and points options->nvme_faults at the injector.
  Status arm(TrainOptions* options);

 private:
  std::string spec_;
  bool armed_ = false;
  storage::FaultInjector injector_;
};

}  // namespace strata::stress
