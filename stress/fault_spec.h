// STRATA_INJECT_FAULTS=SPEC: the environment variable through which `strata stress` (and tests)
// make a child `strata train`'s NVMe tier misbehave (storage/fault_injector.h). A test seam, not a
// product flag: `strata train` has no option for it. The train command reads the variable once,
// in its setup (RunTrain in tools/cmd_train.cc), and hands the text to InjectedFaults::arm; unset
// or empty, nothing is armed. `strata stress` sets it only in the environment of the attempts
// that draw a disk fault (stress/stress_child.h) and removes it from every other child's.
//
// SPEC is a comma-separated list of faults, armed before the run opens its NVMe tier:
//   eio-after=N          the N-th I/O request of the run (N >= 1, counted from the store's open)
//                        fails with EIO
//   enospc-after=BYTES   once BYTES (a size: 0, 4096, 64K, 1M) have been written, every further
//                        write fails with ENOSPC
//   eagain=N             the next N requests fail with EAGAIN (the engines retry them)
//   latency-us=N         every transfer piece completes no sooner than N microseconds after issue
//   short-io             every request of 8 KiB or more moves half its bytes (short reads/writes)
// e.g. `STRATA_INJECT_FAULTS=eio-after=40,latency-us=200 strata train ...`. A bad SPEC is
// InvalidArgument naming STRATA_INJECT_FAULTS (exit 2).
//
// When the process ends, an armed InjectedFaults prints one line on stderr:
// `strata: inject-faults: N requests failed` (N = FaultInjector::injected()), so that the parent
// knows whether an armed fault ever fired.
#pragma once

#include <string>
#include <string_view>

#include "core/util/status.h"
#include "storage/fault_injector.h"

namespace strata {
struct TrainOptions;
}  // namespace strata

namespace strata::stress {

// The variable's name, for the one place that reads it and the parent that sets it.
inline constexpr char kInjectFaultsVariable[] = "STRATA_INJECT_FAULTS";

// Arms `faults` as SPEC says (see above). On error nothing is armed.
Status ParseFaultSpec(std::string_view spec, storage::FaultInjector* faults);

// The disk faults of one `strata train` run: the injector a SPEC arms. Must outlive the Trainer
// that borrows the injector. One thread.
class InjectedFaults {
 public:
  InjectedFaults() = default;
  InjectedFaults(const InjectedFaults&) = delete;
  InjectedFaults& operator=(const InjectedFaults&) = delete;
  // Prints the `inject-faults:` line when armed.
  ~InjectedFaults();

  // Parses `spec` (the value of STRATA_INJECT_FAULTS; empty: nothing to arm) and points
  // options->nvme_faults at the injector. A bad SPEC is InvalidArgument and arms nothing.
  Status arm(std::string_view spec, TrainOptions* options);

 private:
  bool armed_ = false;
  storage::FaultInjector injector_;
};

}  // namespace strata::stress
