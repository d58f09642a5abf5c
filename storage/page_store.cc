// The PageStore's slot bookkeeping, lookups, manifests and stats. The commit protocol is in
// page_store_commit.cc, reads in page_store_read.cc, opening in page_store_open.cc and recovery
// in page_store_recover.cc.
#include "storage/page_store.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>

namespace strata::storage {

PageStore::~PageStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    STRATA_CHECK(live_batches_ == 0)
        << live_batches_ << " PageStore::Batch objects outlive their store";
  }
  engine_.reset();  // waits for reads in flight
}

const std::string& PageStore::slot_path(uint32_t file) const {
  STRATA_CHECK_LT(file, files_.size());
  return files_[file]->path();
}

uint64_t PageStore::slot_offset(const PageEntry& entry) const {
  return files_[entry.file]->offset_of(entry.slot);
}

void PageStore::maybe_free_locked(uint64_t global) {
  SlotState& s = slots_[global];
  if (s.refs == 0 && s.pins == 0 && !s.staged) {
    free_[global / layout_.slots_per_file].push_back(global % layout_.slots_per_file);
    ++free_count_;
  }
}

Result<PageEntry> PageStore::lookup(PageId page) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pages_.find(page);
  if (it == pages_.end()) {
    return Status::NotFound("page " + std::to_string(page) + " has no committed version");
  }
  return it->second;
}

std::vector<PageRecord> PageStore::pages() const {
  std::vector<PageRecord> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.reserve(pages_.size());
    for (const auto& [page, entry] : pages_) out.push_back(PageRecord{page, entry});
  }
  std::sort(out.begin(), out.end(),
            [](const PageRecord& a, const PageRecord& b) { return a.page < b.page; });
  return out;
}

Status PageStore::save_manifest(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("a manifest needs a non-empty name");
  std::lock_guard<std::mutex> commit_lock(commit_mu_);
  Result<std::vector<PageRecord>> existing = catalog_->get_manifest(name);
  if (existing.ok()) {
    return Status::AlreadyExists("manifest '" + name + "' already exists in " + catalog_->path() +
                                 "; delete it first or pick another name");
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  std::vector<PageRecord> records = pages();  // stable: commits are excluded by commit_mu_
  STRATA_RETURN_IF_ERROR(catalog_->put_manifest(name, records));
  std::lock_guard<std::mutex> lock(mu_);
  for (const PageRecord& r : records) ++slots_[global_slot(r.entry)].refs;
  return Status::Ok();
}

Result<std::vector<PageRecord>> PageStore::load_manifest(const std::string& name) const {
  return catalog_->get_manifest(name);
}

Result<std::vector<std::string>> PageStore::manifest_names() const {
  return catalog_->manifest_names();
}

Status PageStore::delete_manifest(const std::string& name) {
  std::lock_guard<std::mutex> commit_lock(commit_mu_);
  STRATA_ASSIGN_OR_RETURN(std::vector<PageRecord> records, catalog_->get_manifest(name));
  STRATA_RETURN_IF_ERROR(catalog_->delete_manifest(name));
  std::lock_guard<std::mutex> lock(mu_);
  for (const PageRecord& r : records) {
    const uint64_t g = global_slot(r.entry);
    if (--slots_[g].refs == 0) {
      --referenced_count_;
      maybe_free_locked(g);
    }
  }
  return Status::Ok();
}

Status PageStore::restore_manifest(const std::string& name) {
  std::lock_guard<std::mutex> commit_lock(commit_mu_);
  STRATA_ASSIGN_OR_RETURN(std::vector<PageRecord> records, catalog_->get_manifest(name));
  std::unordered_map<PageId, PageEntry> restored;
  for (const PageRecord& r : records) restored[r.page] = r.entry;
  std::vector<PageId> erased;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [page, entry] : pages_) {
      if (!restored.count(page)) erased.push_back(page);
    }
  }
  STRATA_RETURN_IF_ERROR(catalog_->commit(records, erased));
  std::lock_guard<std::mutex> lock(mu_);
  // The manifest still references its slots, so none of them can be freed below.
  for (const PageRecord& r : records) {
    if (slots_[global_slot(r.entry)].refs++ == 0) ++referenced_count_;
  }
  for (const auto& [page, entry] : pages_) {
    const uint64_t g = global_slot(entry);
    if (--slots_[g].refs == 0) {
      --referenced_count_;
      maybe_free_locked(g);
    }
  }
  pages_ = std::move(restored);
  return Status::Ok();
}

PageStoreStats PageStore::stats() const {
  PageStoreStats s;
  const IoEngineStats io = engine_->stats();
  s.bytes_read = io.bytes_read;
  s.bytes_written = io.bytes_written;
  std::lock_guard<std::mutex> lock(mu_);
  s.pages_read = pages_read_;
  s.pages_written = pages_written_;
  s.commits = commits_;
  s.pages = pages_.size();
  s.slots_total = slots_.size();
  s.slots_referenced = referenced_count_;
  s.slots_staged = staged_count_;
  s.slots_free = free_count_;
  s.slots_used_peak = used_peak_;
  s.checksum_failures = checksum_failures_;
  return s;
}

Result<std::string> PageStore::store_id() {
  std::lock_guard<std::mutex> commit_lock(commit_mu_);  // two first callers write one id
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> id, catalog_->get_meta("store-id"));
  if (id) return *id;
  std::random_device rd;
  const uint64_t value = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(std::time(nullptr));
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  STRATA_RETURN_IF_ERROR(catalog_->put_meta("store-id", text));
  return std::string(text);
}

}  // namespace strata::storage
