// Recovering a PageStore's in-memory state from its catalog when it opens: the current mapping
// of every page, the references of every manifest, and so the free slots, which are exactly those
// no record references (Note [Commit protocol] in page_store_commit.cc: recovery needs no log).
#include "core/util/log.h"
#include "storage/page_store.h"

namespace strata::storage {

Status PageStore::recover() {
  const uint64_t per_file = layout_.slots_per_file;
  const uint64_t total = per_file * files_.size();
  slots_.assign(total, SlotState{});
  pages_.clear();
  Status bad;
  auto check = [&](const PageRecord& r, const std::string& where) {
    if (!bad.ok()) return false;
    if (r.entry.file >= files_.size() || r.entry.slot >= per_file || r.entry.length == 0 ||
        r.entry.length > layout_.page_bytes) {
      bad = Status::Corruption("catalog " + catalog_->path() + ": " + where + " page " +
                               std::to_string(r.page) + " names slot " +
                               std::to_string(r.entry.slot) + " of file " +
                               std::to_string(r.entry.file) + " with length " +
                               std::to_string(r.entry.length) + ", outside the store's layout");
      return false;
    }
    return true;
  };
  STRATA_RETURN_IF_ERROR(catalog_->for_each_page([&](const PageRecord& r) {
    if (!check(r, "current")) return;
    SlotState& s = slots_[global_slot(r.entry)];
    if (s.refs > 0) {
      bad = Status::Corruption("catalog " + catalog_->path() + ": page " + std::to_string(r.page) +
                               " shares slot " + std::to_string(r.entry.slot) + " of " +
                               files_[r.entry.file]->path() + " with another page");
      return;
    }
    ++s.refs;
    pages_[r.page] = r.entry;
  }));
  STRATA_RETURN_IF_ERROR(bad);
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, catalog_->manifest_names());
  for (const std::string& name : names) {
    STRATA_ASSIGN_OR_RETURN(std::vector<PageRecord> records, catalog_->get_manifest(name));
    for (const PageRecord& r : records) {
      if (!check(r, "manifest '" + name + "'")) break;
      ++slots_[global_slot(r.entry)].refs;
    }
    STRATA_RETURN_IF_ERROR(bad);
  }
  free_.assign(files_.size(), {});
  free_count_ = referenced_count_ = staged_count_ = 0;
  for (size_t f = 0; f < files_.size(); ++f) {
    for (uint64_t s = per_file; s-- > 0;) {
      if (slots_[f * per_file + s].refs == 0) {
        free_[f].push_back(s);
        ++free_count_;
      } else {
        ++referenced_count_;
      }
    }
  }
  used_peak_ = total - free_count_;
  Logger("storage")->info("opened NVMe store {}: {} pages, {} manifests, {} of {} slots free",
                          catalog_->path(), pages_.size(), names.size(), free_count_, total);
  return Status::Ok();
}

}  // namespace strata::storage
