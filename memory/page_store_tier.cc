#include "memory/page_store_tier.h"

#include <algorithm>

namespace strata::memory {

namespace {
// io_uring refuses a fixed buffer above 1 GiB: register long buffers in pieces.
constexpr uint64_t kMaxFixedBufferBytes = 1 * kGiB;
}  // namespace

PageStoreTier::PageStoreTier(storage::PageStore* store) : store_(store) {
  STRATA_CHECK(store_ != nullptr);
  for (const storage::PageRecord& r : store_->pages()) committed_version_[r.page] = r.entry.version;
  batch_ = std::make_unique<storage::PageStore::Batch>(store_->new_batch());
}

PageStoreTier::~PageStoreTier() = default;

Status PageStoreTier::register_buffer(void* buffer, uint64_t bytes) {
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

void PageStoreTier::unregister_buffer(void* buffer) {
  std::lock_guard lock(mu_);
  char* const begin = static_cast<char*>(buffer);
  std::erase_if(registered_, [&](char* piece) {
    if (piece < begin) return false;
    store_->engine().unregister_buffer(piece);
    return true;
  });
}

Status PageStoreTier::stage_write(PageId page, const void* buffer) {
  std::lock_guard lock(mu_);
  if (staged_version_.count(page) != 0) {
    return Status::FailedPrecondition("page " + std::to_string(page) +
                                      " already has a staged NVMe version; commit first");
  }
  auto it = committed_version_.find(page);
  const uint64_t version = (it == committed_version_.end() ? 0 : it->second) + 1;
  STRATA_RETURN_IF_ERROR(store_->write_page_version(*batch_, page, version, buffer, page_bytes()));
  staged_version_[page] = version;
  return Status::Ok();
}

Status PageStoreTier::commit() {
  std::lock_guard commit_lock(commit_mu_);
  std::unique_ptr<storage::PageStore::Batch> batch;
  std::unordered_map<PageId, uint64_t> staged;
  {
    std::lock_guard lock(mu_);
    if (batch_->empty()) return Status::Ok();
    batch = std::move(batch_);
    batch_ = std::make_unique<storage::PageStore::Batch>(store_->new_batch());
    staged.swap(staged_version_);
  }
  Status st = store_->commit(*batch);
  if (st.ok()) {
    std::lock_guard lock(mu_);
    for (const auto& [page, version] : staged) committed_version_[page] = version;
  }
  return st;
}

void PageStoreTier::drop_staged() {
  std::lock_guard commit_lock(commit_mu_);
  std::unique_ptr<storage::PageStore::Batch> batch;
  {
    std::lock_guard lock(mu_);
    batch = std::move(batch_);
    batch_ = std::make_unique<storage::PageStore::Batch>(store_->new_batch());
    staged_version_.clear();
  }
  batch.reset();  // waits for the batch's writes, then frees their slots
}

std::future<Status> PageStoreTier::read(PageId page, void* buffer) {
  return store_->read_page(page, buffer, page_bytes());
}

std::vector<PageId> PageStoreTier::committed_pages() const {
  std::vector<PageId> out;
  for (const storage::PageRecord& r : store_->pages()) out.push_back(r.page);
  return out;
}

NvmeTierStats PageStoreTier::stats() const {
  const storage::PageStoreStats s = store_->stats();
  NvmeTierStats out;
  out.capacity_bytes = s.slots_total * page_bytes();
  out.used_bytes = (s.slots_total - s.slots_free) * page_bytes();
  out.peak_bytes = s.slots_used_peak * page_bytes();
  return out;
}

}  // namespace strata::memory
