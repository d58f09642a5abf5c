#include "scheduler/machine_fit.h"

#include "core/util/log.h"
#include "core/util/sizes.h"

namespace strata {
namespace {

std::string Parts(const RamNeed& need) {
  std::string parts;
  auto add = [&](const char* name, uint64_t bytes) {
    if (bytes == 0) return;
    parts += (parts.empty() ? "" : " + ") + std::string(name) + " " + FormatBytes(bytes);
  };
  add("sim device", need.device_bytes);
  add("host pool", need.host_bytes);
  add("staging", need.staging_bytes);
  return parts;
}

}  // namespace

Status CheckFitsMachine(const RamNeed& need, const MachineMemory& machine, const std::string& what,
                        const std::string& advice) {
  const uint64_t total = need.total();
  if (total > machine.limit_bytes) {
    return Status::InvalidArgument(
        what + " needs " + FormatBytes(total) + " (" + std::to_string(total) +
        " bytes: " + Parts(need) + ") of this machine's memory, but this process can use " +
        FormatBytes(machine.limit_bytes) + " (" + machine.limit_source + "); " + advice);
  }
  if (machine.available_bytes > 0 && total > machine.available_bytes) {
    Logger("train")->warn(
        "{} needs {} ({}), above the {} of memory available now; other processes "
        "may be pushed to swap, or this one killed",
        what, FormatBytes(total), Parts(need), FormatBytes(machine.available_bytes));
  }
  return Status::Ok();
}

}  // namespace strata
