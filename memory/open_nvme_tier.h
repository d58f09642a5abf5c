// OpenNvmeTier: the NVMe tier of a run, over the storage layer's page store in one or more
// directories (docs/storage.md), so that layers above memory/ never reach into storage/.
//
// A store lives in its directories across runs: a new run creates it in empty directories, a
// resumed run reopens it at a snapshot (restore_snapshot: that snapshot's versions become the
// current ones before the manager reads them).
// Errors are the page store's (storage/page_store.h: InvalidArgument for a store of another
// page size or dir list, ResourceExhausted for a directory without room, Corruption, ...) and
// NotFound for a restore_snapshot the store does not hold.
//
// NvmeTierSnapshots is the same store before it becomes a tier: what checkpoint bookkeeping needs
// (the store's id, its snapshots: list, size, verify, delete, restore) before a MemoryManager
// reads it, or instead of training (`strata ckpt`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "memory/nvme_tier.h"

namespace strata::storage {
class FaultInjector;
class PageStore;
}  // namespace strata::storage

namespace strata::memory {

// The test seam through which a run's disk misbehaves (storage/fault_injector.h).
using DiskFaults = storage::FaultInjector;

struct NvmeTierOptions {
  std::vector<std::string> dirs;  // order matters on reopen; the catalog lives in dirs[0]
  uint64_t page_bytes = 0;
  uint64_t capacity_bytes = 0;   // slot bytes of a new store (an existing store keeps its own)
  std::string restore_snapshot;  // non-empty: reopen at this snapshot
  DiskFaults* faults = nullptr;  // borrowed; must outlive the tier
};

// Where the store of `dir` keeps its catalog (for messages), and whether one is there.
std::string PageStoreCatalogPath(const std::string& dir);
bool PageStoreExists(const std::string& dir);
// The page size of the store whose catalog is in `dir`, read without writing anything.
Result<uint64_t> PageStorePageBytes(const std::string& dir);

// The room a new store's slot files have on the disks of `dirs`: each directory gets the same
// number of slots, directories on one filesystem share its free space, and the first keeps the
// catalog's headroom for a store of up to `max_slots` slots (Note [Disk space] in
// storage/page_store_open.cc). `dir` is the directory whose filesystem binds, `free_bytes` what
// that filesystem has free. Errors: stat's or statvfs's (a missing directory).
struct NvmeDiskRoom {
  uint64_t slot_bytes = 0;  // whole pages of slot files across every directory
  std::string dir;
  uint64_t free_bytes = 0;
  uint64_t headroom_bytes = 0;  // kept free beside the slot files in dirs[0]
};
Result<NvmeDiskRoom> RoomForNewPageStore(const std::vector<std::string>& dirs, uint64_t page_bytes,
                                         uint64_t max_slots);

Result<std::unique_ptr<NvmeTier>> OpenNvmeTier(const NvmeTierOptions& options);

struct SnapshotSize {
  uint64_t pages = 0;
  uint64_t bytes = 0;  // payload bytes of its page versions
};

// Threads: one thread at a time. Owns the page store until IntoTier() moves it into a tier.
class NvmeTierSnapshots {
 public:
  // Opens (or creates) the store as OpenNvmeTier does, without restoring any snapshot
  // (options.restore_snapshot is ignored).
  static Result<std::unique_ptr<NvmeTierSnapshots>> Open(const NvmeTierOptions& options);
  ~NvmeTierSnapshots();

  uint64_t page_bytes() const;
  uint64_t capacity_bytes() const;  // slot bytes across every directory
  uint64_t used_bytes() const;      // slots held by current pages and snapshots
  // A random 64-bit id (16 hex digits) kept in the store, made durably on first use.
  Result<std::string> id();
  Result<std::vector<std::string>> snapshot_names() const;
  // NotFound for a snapshot the store does not hold.
  Result<SnapshotSize> snapshot_size(const std::string& name) const;
  // Reads every page version the snapshot names and checks its checksum. Corruption naming
  // the page, the file and the offset of the first mismatch; NotFound for an unknown snapshot;
  // the read's IoError otherwise.
  [[nodiscard]] Status verify_snapshot(const std::string& name);
  [[nodiscard]] Status delete_snapshot(const std::string& name);
  // The snapshot's versions become the current ones (before a tier reads them).
  [[nodiscard]] Status restore_snapshot(const std::string& name);
  // The tier over this store, for a MemoryManager; the store moves into it.
  static std::unique_ptr<NvmeTier> IntoTier(std::unique_ptr<NvmeTierSnapshots> store);

 private:
  explicit NvmeTierSnapshots(std::unique_ptr<storage::PageStore> store);
  std::unique_ptr<storage::PageStore> store_;
};

}  // namespace strata::memory
