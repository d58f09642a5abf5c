#include "memory/page_store_nvme_tier.h"

#include <algorithm>

namespace strata::memory {

namespace {
// io_uring refuses a fixed buffer above 1 GiB: register long buffers in pieces.
constexpr uint64_t kMaxFixedBufferBytes = 1 * kGiB;
}  // namespace

// A sealed PageStore batch with the versions it holds.
class PageStoreNvmeTier::Sealed final : public NvmeBatch {
 public:
  Sealed(std::unique_ptr<storage::PageStore::Batch> batch, std::vector<PageId> pages)
      : batch(std::move(batch)) {
    pages_ = std::move(pages);
  }
  std::unique_ptr<storage::PageStore::Batch> batch;
};

PageStoreNvmeTier::PageStoreNvmeTier(storage::PageStore* store) : store_(store) {
  STRATA_CHECK(store_ != nullptr);
  for (const storage::PageRecord& r : store_->pages()) committed_version_[r.page] = r.entry.version;
  batch_ = std::make_unique<storage::PageStore::Batch>(store_->new_batch());
}

PageStoreNvmeTier::PageStoreNvmeTier(std::unique_ptr<storage::PageStore> store)
    : PageStoreNvmeTier(store.get()) {
  owned_ = std::move(store);
}

PageStoreNvmeTier::~PageStoreNvmeTier() { batch_.reset(); }

Status PageStoreNvmeTier::register_buffer(void* buffer, uint64_t bytes) {
  const uint64_t piece =
      std::max<uint64_t>(page_bytes(), kMaxFixedBufferBytes / page_bytes() * page_bytes());
  char* const p = static_cast<char*>(buffer);
  for (uint64_t off = 0; off < bytes; off += piece) {
    STRATA_RETURN_IF_ERROR(store_->engine().register_buffer(p + off, std::min(piece, bytes - off)));
    std::lock_guard lock(mu_);
    registered_.push_back(p + off);
  }
  return Status::Ok();
}

void PageStoreNvmeTier::unregister_buffer(void* buffer) {
  std::lock_guard lock(mu_);
  char* const begin = static_cast<char*>(buffer);
  std::erase_if(registered_, [&](char* piece) {
    if (piece < begin) return false;
    store_->engine().unregister_buffer(piece);
    return true;
  });
}

Status PageStoreNvmeTier::stage_write(PageId page, const void* buffer) {
  std::lock_guard lock(mu_);
  if (staged_version_.count(page) != 0) {
    return Status::FailedPrecondition("page " + std::to_string(page) +
                                      " already has a staged NVMe version; commit first");
  }
  auto it = committed_version_.find(page);
  const uint64_t version = (it == committed_version_.end() ? 0 : it->second) + 1;
  // Starts the write (a submission, no wait): the PageStore's engine completes it.
  STRATA_RETURN_IF_ERROR(store_->write_page_version(*batch_, page, version, buffer, page_bytes()));
  staged_version_[page] = version;
  batch_pages_.push_back(page);
  return Status::Ok();
}

std::unique_ptr<NvmeBatch> PageStoreNvmeTier::seal() {
  std::lock_guard lock(mu_);
  auto sealed = std::make_unique<Sealed>(std::move(batch_), std::move(batch_pages_));
  batch_ = std::make_unique<storage::PageStore::Batch>(store_->new_batch());
  batch_pages_.clear();
  return sealed;
}

Status PageStoreNvmeTier::commit(std::unique_ptr<NvmeBatch> batch) {
  auto* sealed = dynamic_cast<Sealed*>(batch.get());
  STRATA_CHECK(sealed != nullptr) << "commit of a batch this tier did not seal";
  if (sealed->pages().empty()) return Status::Ok();
  Status st = store_->commit(*sealed->batch);
  std::lock_guard lock(mu_);
  for (PageId page : sealed->pages()) {
    auto it = staged_version_.find(page);
    if (st.ok()) committed_version_[page] = it->second;
    staged_version_.erase(it);
  }
  return st;
}

void PageStoreNvmeTier::drop_staged() {
  std::unique_ptr<NvmeBatch> batch = seal();
  {
    std::lock_guard lock(mu_);
    for (PageId page : batch->pages()) staged_version_.erase(page);
  }
  batch.reset();  // waits for the batch's writes, then frees their slots
}

std::future<Status> PageStoreNvmeTier::read(PageId page, void* buffer) {
  return store_->read_page(page, buffer, page_bytes());
}

std::vector<PageId> PageStoreNvmeTier::committed_pages() const {
  std::vector<PageId> out;
  for (const storage::PageRecord& r : store_->pages()) out.push_back(r.page);
  return out;
}

Status PageStoreNvmeTier::save_snapshot(const std::string& name) {
  return store_->save_manifest(name);
}

Result<std::vector<std::string>> PageStoreNvmeTier::snapshot_names() const {
  return store_->manifest_names();
}

Status PageStoreNvmeTier::delete_snapshot(const std::string& name) {
  return store_->delete_manifest(name);
}

NvmeTierStats PageStoreNvmeTier::stats() const {
  const storage::PageStoreStats s = store_->stats();
  NvmeTierStats out;
  out.capacity_bytes = s.slots_total * page_bytes();
  out.used_bytes = (s.slots_total - s.slots_free) * page_bytes();
  out.peak_bytes = s.slots_used_peak * page_bytes();
  return out;
}

}  // namespace strata::memory
