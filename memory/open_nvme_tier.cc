#include "memory/open_nvme_tier.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <future>

#include "memory/page_store_nvme_tier.h"
#include "storage/aligned_buffer.h"
#include "storage/catalog.h"
#include "storage/page_store.h"
#include "storage/posix_file.h"

namespace strata::memory {

std::string PageStoreCatalogPath(const std::string& dir) { return storage::Catalog::PathFor(dir); }

bool PageStoreExists(const std::string& dir) {
  return storage::Catalog::Exists(storage::Catalog::PathFor(dir));
}

Result<uint64_t> PageStorePageBytes(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(storage::StoreLayout layout,
                          storage::Catalog::ReadLayout(storage::Catalog::PathFor(dir)));
  return layout.page_bytes;
}

Result<NvmeDiskRoom> RoomForNewPageStore(const std::vector<std::string>& dirs, uint64_t page_bytes,
                                         uint64_t max_slots) {
  std::vector<dev_t> devs;
  for (const std::string& d : dirs) {
    struct stat st;
    if (::stat(d.c_str(), &st) != 0) return Status::FromErrno(errno, d);
    devs.push_back(st.st_dev);
  }
  NvmeDiskRoom room;
  room.headroom_bytes = storage::CatalogHeadroomBytes(max_slots);
  uint64_t per_dir_pages = UINT64_MAX;
  for (size_t i = 0; i < dirs.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(const uint64_t free_bytes, storage::FreeBytes(dirs[i]));
    const uint64_t sharing = uint64_t(std::count(devs.begin(), devs.end(), devs[i]));
    const uint64_t kept = devs[i] == devs[0] ? room.headroom_bytes : 0;
    const uint64_t pages = (free_bytes > kept ? free_bytes - kept : 0) / sharing / page_bytes;
    if (pages < per_dir_pages) {
      per_dir_pages = pages;
      room.dir = dirs[i];
      room.free_bytes = free_bytes;
    }
  }
  room.slot_bytes = per_dir_pages * page_bytes * dirs.size();
  return room;
}

Result<std::unique_ptr<NvmeTier>> OpenNvmeTier(const NvmeTierOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<NvmeTierSnapshots> store,
                          NvmeTierSnapshots::Open(options));
  if (!options.restore_snapshot.empty()) {
    // Before the tier reads the committed versions: the snapshot's become the current ones.
    STRATA_RETURN_IF_ERROR(store->restore_snapshot(options.restore_snapshot));
  }
  return NvmeTierSnapshots::IntoTier(std::move(store));
}

Result<std::unique_ptr<NvmeTierSnapshots>> NvmeTierSnapshots::Open(const NvmeTierOptions& options) {
  storage::PageStoreOptions so;
  so.dirs = options.dirs;
  so.page_bytes = options.page_bytes;
  so.capacity_bytes = options.capacity_bytes;
  so.faults = options.faults;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<storage::PageStore> store, storage::PageStore::Open(so));
  return std::unique_ptr<NvmeTierSnapshots>(new NvmeTierSnapshots(std::move(store)));
}

NvmeTierSnapshots::NvmeTierSnapshots(std::unique_ptr<storage::PageStore> store)
    : store_(std::move(store)) {}
NvmeTierSnapshots::~NvmeTierSnapshots() = default;

uint64_t NvmeTierSnapshots::page_bytes() const { return store_->page_bytes(); }

uint64_t NvmeTierSnapshots::capacity_bytes() const {
  return store_->stats().slots_total * store_->page_bytes();
}

uint64_t NvmeTierSnapshots::used_bytes() const {
  const storage::PageStoreStats s = store_->stats();
  return (s.slots_total - s.slots_free) * store_->page_bytes();
}

Result<std::string> NvmeTierSnapshots::id() { return store_->store_id(); }

Result<std::vector<std::string>> NvmeTierSnapshots::snapshot_names() const {
  return store_->manifest_names();
}

Result<SnapshotSize> NvmeTierSnapshots::snapshot_size(const std::string& name) const {
  STRATA_ASSIGN_OR_RETURN(std::vector<storage::PageRecord> records, store_->load_manifest(name));
  SnapshotSize size;
  size.pages = records.size();
  for (const storage::PageRecord& r : records) size.bytes += r.entry.length;
  return size;
}

// One page at a time: a verify runs before training or from `strata ckpt`, where nothing else
// competes for the disk, and its reads are whole slots.
Status NvmeTierSnapshots::verify_snapshot(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(std::vector<storage::PageRecord> records, store_->load_manifest(name));
  STRATA_ASSIGN_OR_RETURN(storage::AlignedBuffer buffer,
                          storage::AlignedBuffer::Allocate(store_->page_bytes()));
  for (const storage::PageRecord& r : records) {
    std::promise<Status> done;
    std::future<Status> result = done.get_future();
    Status s = store_->read_record(
        r, buffer.data(), buffer.size(),
        [&done](const Status& st, const storage::PageEntry&) { done.set_value(st); });
    if (s.ok()) s = result.get();
    if (!s.ok()) return s.with_context("snapshot " + name);
  }
  return Status::Ok();
}

Status NvmeTierSnapshots::delete_snapshot(const std::string& name) {
  return store_->delete_manifest(name);
}

Status NvmeTierSnapshots::restore_snapshot(const std::string& name) {
  return store_->restore_manifest(name);
}

std::unique_ptr<NvmeTier> NvmeTierSnapshots::IntoTier(std::unique_ptr<NvmeTierSnapshots> store) {
  return std::make_unique<PageStoreNvmeTier>(std::move(store->store_));
}

}  // namespace strata::memory
