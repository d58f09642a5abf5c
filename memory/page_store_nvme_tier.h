// PageStoreNvmeTier: NvmeTier over the storage layer's PageStore (storage/page_store.h).
//
// Each stage_write() puts the page's next version (its committed version + 1) into the open
// PageStore::Batch; seal() hands that batch out and opens a new one; commit(batch) commits it
// (the PageStore serialises commits itself). Pages are written whole (page_bytes). Snapshots
// are the store's manifests.
// Threads: mu_ guards the open batch and the version tables; it is never held across I/O.
// Ownership: the PageStore is borrowed (it must outlive this object) or owned (OpenNvmeTier);
// either way this object, which holds the open Batch, goes first.
// Manifests: restore a checkpoint (PageStore::restore_manifest) before creating this tier and
// the MemoryManager over it; both read the store's current mappings once, at creation.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "memory/nvme_tier.h"
#include "storage/page_store.h"

namespace strata::memory {

class PageStoreNvmeTier final : public NvmeTier {
 public:
  explicit PageStoreNvmeTier(storage::PageStore* store);
  explicit PageStoreNvmeTier(std::unique_ptr<storage::PageStore> store);
  ~PageStoreNvmeTier() override;

  uint64_t page_bytes() const override { return store_->page_bytes(); }
  Status register_buffer(void* buffer, uint64_t bytes) override;
  void unregister_buffer(void* buffer) override;
  Status stage_write(PageId page, const void* buffer) override;
  std::unique_ptr<NvmeBatch> seal() override;
  Status commit(std::unique_ptr<NvmeBatch> batch) override;
  void drop_staged() override;
  std::future<Status> read(PageId page, void* buffer) override;
  std::vector<PageId> committed_pages() const override;
  Status save_snapshot(const std::string& name) override;
  Result<std::vector<std::string>> snapshot_names() const override;
  Status delete_snapshot(const std::string& name) override;
  NvmeTierStats stats() const override;

 private:
  class Sealed;
  std::unique_ptr<storage::PageStore> owned_;  // null when borrowed
  storage::PageStore* const store_;
  mutable std::mutex mu_;
  std::unique_ptr<storage::PageStore::Batch> batch_;        // Batch is not move-assignable
  std::vector<PageId> batch_pages_;                         // of batch_, in staging order
  std::unordered_map<PageId, uint64_t> committed_version_;  // from the store, then ours
  std::unordered_map<PageId, uint64_t> staged_version_;     // of every uncommitted batch
  std::vector<char*> registered_;                           // fixed-buffer pieces
};

}  // namespace strata::memory
