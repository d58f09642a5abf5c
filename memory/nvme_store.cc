#include "memory/nvme_store.h"

#include "memory/page_store_tier.h"
#include "storage/catalog.h"
#include "storage/page_store.h"

namespace strata::memory {

std::string NvmeStorePath(const std::string& dir) { return storage::Catalog::PathFor(dir); }

bool NvmeStoreExists(const std::string& dir) {
  return storage::Catalog::Exists(storage::Catalog::PathFor(dir));
}

Result<std::unique_ptr<NvmeTier>> OpenNvmeStore(const NvmeStoreOptions& options) {
  storage::PageStoreOptions so;
  so.dirs = options.dirs;
  so.page_bytes = options.page_bytes;
  so.capacity_bytes = options.capacity_bytes;
  so.faults = options.faults;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<storage::PageStore> store, storage::PageStore::Open(so));
  if (!options.restore_snapshot.empty()) {
    // Before the tier reads the committed versions: the snapshot's become the current ones.
    STRATA_RETURN_IF_ERROR(store->restore_manifest(options.restore_snapshot));
  }
  return std::unique_ptr<NvmeTier>(std::make_unique<PageStoreTier>(std::move(store)));
}

}  // namespace strata::memory
