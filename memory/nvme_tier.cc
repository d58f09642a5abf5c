#include "memory/nvme_tier.h"

namespace strata::memory {

Status NvmeTier::save_snapshot(const std::string& name) {
  return Status::NotSupported("snapshot " + name + ": this NVMe tier keeps no snapshots");
}

Result<std::vector<std::string>> NvmeTier::snapshot_names() const {
  return std::vector<std::string>{};
}

Status NvmeTier::delete_snapshot(const std::string& name) {
  return Status::NotFound("snapshot " + name + ": this NVMe tier keeps no snapshots");
}

}  // namespace strata::memory
