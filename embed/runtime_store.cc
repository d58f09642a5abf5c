// Runtime: its NVMe store: where it lives, whether this runtime may use it, opening it, and
// the manifests no checkpoint lists (Note [Dropping checkpoints] in checkpoint_book.h).
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "embed/runtime.h"
#include "memory/nvme_capacity.h"
#include "memory/open_nvme_tier.h"

namespace strata::embed {

// The NVMe tier's directories: nvme_dir, else <checkpoint_dir>/pages when checkpoints are asked
// for. A new runtime needs an empty store (an old one's pages would read back); a resumed one
// reopens the store at its checkpoint's manifest.
std::vector<std::string> Runtime::nvme_dirs() const {
  std::vector<std::string> dirs = options_.nvme_dirs;
  if (dirs.empty() && book_) dirs.push_back(options_.checkpoint_dir + "/pages");
  return dirs;
}

Status Runtime::check_store() {
  const std::vector<std::string> dirs = nvme_dirs();
  if (!options_.resume.empty()) {
    STRATA_ASSIGN_OR_RETURN(const CheckpointBook::Entry* entry, book_->find(options_.resume));
    resumed_ = *entry;
  } else if (!dirs.empty() && memory::PageStoreExists(dirs[0])) {
    STRATA_RETURN_IF_ERROR(check_store_free(dirs));
    return Status::FailedPrecondition("nvme_dir '" + dirs[0] +
                                      "' holds the page store of an earlier runtime (" +
                                      memory::PageStoreCatalogPath(dirs[0]) +
                                      "); give an empty directory, or set resume to one of "
                                      "its checkpoints to continue from it");
  }
  // The store opens when the layout is sealed; a directory that cannot be made fails now.
  for (const std::string& d : dirs) {
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec) return Status::IoError("cannot create nvme_dir '" + d + "': " + ec.message());
  }
  return Status::Ok();
}

// FailedPrecondition "... is in use by pid N ..." while a live runtime (of this process or
// another) has the store open. A store's lock is the first thing its open takes, and a store
// that is not free is left untouched (storage/store_lock.h); opening it is how a layer above
// storage/ asks. A free store is opened and closed again, which runs its crash recovery as a
// resume would. Any other error of the open is no answer: the caller's message stands.
Status Runtime::check_store_free(const std::vector<std::string>& dirs) const {
  auto page_bytes = memory::PageStorePageBytes(dirs[0]);
  if (!page_bytes.ok()) return Status::Ok();
  memory::NvmeTierOptions so;
  so.dirs = dirs;
  so.page_bytes = *page_bytes;
  auto store = memory::NvmeTierSnapshots::Open(so);
  const Status& s = store.status();
  if (s.code() != StatusCode::kFailedPrecondition ||
      s.message().find(" is in use by ") == std::string::npos) {
    return Status::Ok();
  }
  const std::string pid = std::to_string(::getpid());
  if (s.message().find("in use by pid " + pid + ":") == std::string::npos) {
    return s.with_context("strata_runtime_create");
  }
  return Status::FailedPrecondition(
      "strata_runtime_create: nvme_dir " + dirs[0] + " is in use by pid " + pid +
      " (this process): another runtime has its store open; close that runtime first "
      "(strata_runtime_close), or give another nvme_dir");
}

// Opened when the layout is sealed. Unless nvme_mem is set, the capacity is what the tier
// stores (Note [NVMe capacity] in memory/nvme_capacity.h): one version of every page, the
// versions the host pool can stage, and with a checkpoint_dir the kept checkpoints' (keep_
// checkpoints, or 2 when it keeps every checkpoint: a store cannot be sized for all of them);
// at least 64 MiB. The store's slot files are allocated whole, so this is disk taken at open. A
// resumed store then drops the manifests no checkpoint lists.
uint64_t Runtime::default_nvme_bytes() const {
  memory::NvmeSizingInput in;
  in.page_bytes = layout_.page_bytes();
  in.state_pages = layout_.num_pages();
  for (memory::PageId p = 0; p < layout_.num_pages(); ++p) {
    const std::vector<size_t>& in_page = layout_.tensors_in(p);
    const bool gradient =
        !in_page.empty() && layout_.tensor(in_page.front()).role == STRATA_ROLE_GRADIENT;
    if (!gradient) ++in.durable_pages;
  }
  in.host_pages = options_.host_bytes / options_.page_bytes;
  if (!options_.checkpoint_dir.empty()) {
    in.keep_checkpoints = options_.keep_checkpoints != 0 ? options_.keep_checkpoints : 2;
  }
  return std::max<uint64_t>(memory::SizeNvmeTier(in).capacity_bytes, 64ull << 20);
}

Status Runtime::open_memory() {
  const std::vector<std::string> dirs = nvme_dirs();
  if (dirs.empty() || nvme_) return Status::Ok();
  memory::NvmeTierOptions so;
  so.dirs = dirs;
  so.page_bytes = options_.page_bytes;
  so.capacity_bytes = options_.nvme_bytes != 0 ? options_.nvme_bytes : default_nvme_bytes();
  so.restore_snapshot = resumed_.manifest;
  STRATA_ASSIGN_OR_RETURN(nvme_, memory::OpenNvmeTier(so));
  return resumed_.name.empty() ? Status::Ok() : collect_unlisted();
}

// Note [Dropping checkpoints]: a kill between a record that stopped listing a checkpoint and
// the deletion of its manifest leaves the manifest behind; this deletes every such one.
Status Runtime::collect_unlisted() {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, nvme_->snapshot_names());
  std::vector<std::string> unlisted;
  for (const std::string& name : names) {
    if (CheckpointBook::IsManifest(name) && !book_->lists_manifest(name)) unlisted.push_back(name);
  }
  for (const std::string& name : unlisted) {
    STRATA_RETURN_IF_ERROR(nvme_->delete_snapshot(name));
  }
  return Status::Ok();
}

// Deletes manifests the record no longer lists. One the store does not hold (a checkpoint of an
// earlier store recorded in the same checkpoint_dir) is already gone. Before the store opens,
// nothing: a resumed runtime collects them as it opens it, and a new runtime's store holds none.
Status Runtime::delete_manifests(const std::vector<std::string>& manifests) {
  if (!nvme_) return Status::Ok();
  for (const std::string& name : manifests) {
    const Status s = memory_ ? memory_->delete_snapshot(name) : nvme_->delete_snapshot(name);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  return Status::Ok();
}

}  // namespace strata::embed
