// OpenNvmeStore: the NVMe tier of a run, over the storage layer's page store in one or more
// directories (docs/storage.md), so that layers above memory/ never reach into storage/.
//
// A store lives in its directories across runs: a new run creates it in empty directories, a
// resumed run reopens it at a snapshot (restore_snapshot: that snapshot's versions become the
// current ones before the manager reads them).
// Errors are the page store's (storage/page_store.h: InvalidArgument for a store of another
// page size or dir list, ResourceExhausted for a directory without room, Corruption, ...) and
// NotFound for a restore_snapshot the store does not hold.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "memory/nvme_tier.h"

namespace strata::storage {
class FaultInjector;
}  // namespace strata::storage

namespace strata::memory {

// The test seam through which a run's disk misbehaves (storage/fault_injector.h).
using DiskFaults = storage::FaultInjector;

struct NvmeStoreOptions {
  std::vector<std::string> dirs;  // order matters on reopen; the catalog lives in dirs[0]
  uint64_t page_bytes = 0;
  uint64_t capacity_bytes = 0;   // slot bytes of a new store (an existing store keeps its own)
  std::string restore_snapshot;  // non-empty: reopen at this snapshot
  DiskFaults* faults = nullptr;  // borrowed; must outlive the tier
};

// Where the store of `dir` keeps its catalog (for messages), and whether one is there.
std::string NvmeStorePath(const std::string& dir);
bool NvmeStoreExists(const std::string& dir);

Result<std::unique_ptr<NvmeTier>> OpenNvmeStore(const NvmeStoreOptions& options);

}  // namespace strata::memory
