// Whether a planned run fits the memory this process can use (core/util/machine_memory.h),
// checked after the plans are made and before anything is mapped: a configuration that
// cannot fit is one line with the numbers (InvalidArgument, exit 2), not gigabytes of page
// faults and then the OOM killer.
//
// Only what lives in this machine's RAM counts: the sim device's arena (its device memory is a
// host mapping), the pinned host pool, and whole-model staging buffers (--init, --export).
// A real device's memory is checked by its own allocator.
//
// Threads: pure functions, plus one log line.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/machine_memory.h"
#include "core/util/status.h"

namespace strata {

struct RamNeed {
  uint64_t device_bytes = 0;   // the sim device's arena as the plan uses it (0: a real device)
  uint64_t host_bytes = 0;     // the pinned host pool
  uint64_t staging_bytes = 0;  // whole-model buffers: --init's file, --export's copy
  uint64_t total() const { return device_bytes + host_bytes + staging_bytes; }
};

// InvalidArgument when need.total() is above machine.limit_bytes: "`what` needs N (device D +
// host H + staging S) of this machine's memory, but it has L (source); `advice`". A warning in
// the log when it fits the limit but not MemAvailable.
Status CheckFitsMachine(const RamNeed& need, const MachineMemory& machine, const std::string& what,
                        const std::string& advice);

}  // namespace strata
