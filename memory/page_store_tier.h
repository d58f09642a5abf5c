// PageStoreTier: NvmeTier over the storage layer's PageStore (storage/page_store.h).
//
// Each stage_write() puts the page's next version (its committed version + 1) into the current
// PageStore::Batch; commit() commits that batch. Pages are written whole (page_bytes).
// Threads: mu_ guards the current batch and the version table; commit_mu_ serialises commits
// and is taken before mu_ (a commit swaps in a fresh batch under mu_, then commits the old one
// with only commit_mu_ held, so stage_write() is never blocked behind a commit's fdatasync).
// Ownership: the PageStore is borrowed and must outlive this object (and this object, which
// holds the open Batch, must be destroyed before the store).
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

class PageStoreTier final : public NvmeTier {
 public:
  explicit PageStoreTier(storage::PageStore* store);
  ~PageStoreTier() override;

  uint64_t page_bytes() const override { return store_->page_bytes(); }
  Status register_buffer(void* buffer, uint64_t bytes) override;
  void unregister_buffer(void* buffer) override;
  Status stage_write(PageId page, const void* buffer) override;
  Status commit() override;
  void drop_staged() override;
  std::future<Status> read(PageId page, void* buffer) override;
  std::vector<PageId> committed_pages() const override;
  NvmeTierStats stats() const override;

 private:
  storage::PageStore* const store_;
  std::mutex commit_mu_;
  mutable std::mutex mu_;
  std::unique_ptr<storage::PageStore::Batch> batch_;        // Batch is not move-assignable
  std::unordered_map<PageId, uint64_t> committed_version_;  // from the store, then ours
  std::unordered_map<PageId, uint64_t> staged_version_;     // of the current batch
  std::vector<char*> registered_;                           // fixed-buffer pieces
};

}  // namespace strata::memory
