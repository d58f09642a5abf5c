#include "core/util/machine_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace strata {
namespace {

// "<key>: <n> kB" of a /proc file, in bytes; 0 when absent.
uint64_t ProcKilobytes(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    uint64_t kb = 0;
    fields >> kb;
    return kb * 1024;
  }
  return 0;
}

// The address space left under RLIMIT_AS (what is mapped already counts against it).
uint64_t AddressSpaceLeft() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  const uint64_t mapped = ProcKilobytes("/proc/self/status", "VmSize");
  return rl.rlim_cur > mapped ? rl.rlim_cur - mapped : 0;
}

// memory.max of this process's cgroup (v2), UINT64_MAX when unlimited or unknown.
uint64_t CgroupLimit() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::ifstream max("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    std::string value;
    if (!(max >> value) || value == "max") return UINT64_MAX;
    try {
      return std::stoull(value);
    } catch (const std::exception&) {
      return UINT64_MAX;
    }
  }
  return UINT64_MAX;
}

}  // namespace

MachineMemory ReadMachineMemory() {
  MachineMemory m;
  m.physical_bytes = ProcKilobytes("/proc/meminfo", "MemTotal");
  if (m.physical_bytes == 0) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) m.physical_bytes = uint64_t(pages) * uint64_t(page);
  }
  m.available_bytes = ProcKilobytes("/proc/meminfo", "MemAvailable");
  m.limit_bytes = m.physical_bytes > 0 ? m.physical_bytes : UINT64_MAX;
  m.limit_source = "physical memory";
  const uint64_t address_space = AddressSpaceLeft();
  if (address_space < m.limit_bytes) {
    m.limit_bytes = address_space;
    m.limit_source = "ulimit -v";
  }
  const uint64_t cgroup = CgroupLimit();
  if (cgroup < m.limit_bytes) {
    m.limit_bytes = cgroup;
    m.limit_source = "cgroup memory.max";
  }
  return m;
}

}  // namespace strata
