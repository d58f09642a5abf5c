// How much memory this process can use: the machine's RAM and the limits placed on the process,
// read once where a run is planned, so that a configuration that cannot fit is refused with the
// numbers before anything is mapped (not killed by the OOM killer halfway through step 1).
//
// The limit is the tightest of: physical memory (MemTotal), the address space left under
// RLIMIT_AS (`ulimit -v`) and the cgroup's memory.max (a container's limit). MemAvailable is
// reported too, for a warning: it moves with what other processes do, so refusing on it would
// make the same command work or fail from one minute to the next.
//
// Threads: free functions reading /proc, /sys and getrlimit; safe from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

struct MachineMemory {
  uint64_t physical_bytes = 0;   // MemTotal (0 when /proc/meminfo is unreadable)
  uint64_t available_bytes = 0;  // MemAvailable (0 when unknown)
  uint64_t limit_bytes = 0;      // the tightest limit below; UINT64_MAX when none is known
  // What sets limit_bytes: "physical memory", "ulimit -v" or "cgroup memory.max".
  std::string limit_source;
};

MachineMemory ReadMachineMemory();

}  // namespace strata
