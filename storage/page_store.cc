// Note [Commit protocol]
// 1. write_page_version takes a free slot (marked staged, so neither the free list nor a
//    concurrent writer can hand it out) and starts the write; the payload's checksum is taken
//    when the write completes (Note [Checksum on completion]).
// 2. commit waits for the batch's writes, then fdatasyncs every slot file it touched: the new
//    versions are durable before anything points at them.
// 3. One RocksDB WriteBatch (sync=true) replaces the mappings of every page in the batch. This
//    is the commit point: before it the catalog names only old versions, after it only new.
// 4. Only then are the old slots released — and a slot that a reader has pinned is freed when
//    the read finishes, so a read never races with the reuse of its slot.
// Recovery needs no log: the free slots are exactly those no catalog record (current mapping or
// manifest) references, so a version written but not committed is simply garbage.
//
// Note [Checksum on completion]
// The XXH3 of a page version is computed in the write's completion callback (an I/O engine
// thread), not by the caller before submitting. Hashing streams the page through memory once,
// as fast as the disk takes it on this machine, so hashing first put a second full pass in
// series with the writes: bench pages measured 0.75 of the raw IoEngine's write rate that way.
// On completion it overlaps the writes still in flight (the engine refills its queue before it
// runs callbacks). It is the same bytes either way: a write buffer must stay unchanged until
// its batch is committed, and commit() waits for every callback before it reads the sums.
#include "storage/page_store.h"

#include "storage/page_checksum.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

#include "storage/posix_file.h"

namespace strata::storage {
namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string Hex(uint64_t v) { return HexOffset(v); }

}  // namespace

struct PageStore::BatchState {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t pending = 0;
  Status error;
  // XXH3 of each staged version, by its index in Batch::staged_, filled in by the write's
  // completion (Note [Checksum on completion]); copied into the entries once all are done.
  std::vector<uint64_t> checksums;
};

PageStore::Batch::Batch(PageStore* store) : store_(store), state_(std::make_shared<BatchState>()) {}

PageStore::Batch::Batch(Batch&& other) noexcept
    : store_(other.store_), staged_(std::move(other.staged_)), state_(std::move(other.state_)) {
  other.store_ = nullptr;
  other.staged_.clear();
}

PageStore::Batch::~Batch() {
  if (store_ == nullptr) return;
  store_->release_staged(*this);
  std::lock_guard<std::mutex> lock(store_->mu_);
  --store_->live_batches_;
}

PageStore::Batch PageStore::new_batch() {
  std::lock_guard<std::mutex> lock(mu_);
  ++live_batches_;
  return Batch(this);
}

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

Result<PageEntry> PageStore::allocate_slot_locked(PageId page) {
  const size_t n = files_.size();
  // Round-robin over the directories stripes consecutive writes across disks.
  for (size_t k = 0; k < n; ++k) {
    const size_t f = (next_file_ + k) % n;
    if (free_[f].empty()) continue;
    next_file_ = f + 1;
    PageEntry e;
    e.file = static_cast<uint32_t>(f);
    e.slot = free_[f].back();
    free_[f].pop_back();
    --free_count_;
    ++staged_count_;
    slots_[global_slot(e)].staged = true;
    used_peak_ = std::max(used_peak_, slots_.size() - free_count_);
    return e;
  }
  return Status::ResourceExhausted(
      "NVMe store is full: no free slot for page " + std::to_string(page) + " (all " +
      std::to_string(slots_.size()) + " slots of " + FormatBytes(layout_.page_bytes) +
      " are referenced by pages, manifests or uncommitted writes); drop old checkpoints "
      "(strata ckpt prune CKPT_DIR --keep 1), or grow the store: reopen it (--resume) with a "
      "larger --nvme-mem");
}

void PageStore::maybe_free_locked(uint64_t global) {
  SlotState& s = slots_[global];
  if (s.refs == 0 && s.pins == 0 && !s.staged) {
    free_[global / layout_.slots_per_file].push_back(global % layout_.slots_per_file);
    ++free_count_;
  }
}

Status PageStore::write_page_version(Batch& batch, PageId page, uint64_t version,
                                     const void* buffer, uint64_t bytes) {
  STRATA_CHECK(batch.store_ == this) << "batch of another PageStore";
  if (bytes == 0 || bytes > layout_.page_bytes) {
    return Status::InvalidArgument("write of page " + std::to_string(page) + ": " +
                                   std::to_string(bytes) + " bytes does not fit a page of " +
                                   std::to_string(layout_.page_bytes));
  }
  if (!IsIoAligned(buffer)) {
    return Status::InvalidArgument("write of page " + std::to_string(page) +
                                   ": the buffer is not 4 KiB aligned");
  }
  for (const PageRecord& r : batch.staged_) {
    if (r.page == page) {
      return Status::InvalidArgument("page " + std::to_string(page) +
                                     " is written twice in one batch");
    }
  }
  PageEntry entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pages_.find(page);
    if (it != pages_.end() && it->second.version >= version) {
      return Status::InvalidArgument("page " + std::to_string(page) + ": version " +
                                     std::to_string(version) + " is not newer than committed " +
                                     std::to_string(it->second.version));
    }
    STRATA_ASSIGN_OR_RETURN(entry, allocate_slot_locked(page));
    ++pages_written_;
  }
  entry.version = version;
  entry.length = bytes;
  const size_t index = batch.staged_.size();
  batch.staged_.push_back(PageRecord{page, entry});
  {
    std::lock_guard<std::mutex> lock(batch.state_->mu);
    ++batch.state_->pending;
    batch.state_->checksums.resize(index + 1);
  }
  std::shared_ptr<BatchState> state = batch.state_;
  IoRequest request{IoOp::kWrite,
                    engine_files_[entry.file],
                    slot_offset(entry),
                    const_cast<void*>(buffer),
                    RoundUpToIoAlign(bytes),
                    [state, page, version, buffer, bytes, index](const Status& s) {
                      const uint64_t checksum = s.ok() ? PageChecksum(buffer, bytes) : 0;
                      std::lock_guard<std::mutex> lock(state->mu);
                      state->checksums[index] = checksum;
                      if (!s.ok() && state->error.ok()) {
                        state->error = s.with_context("page " + std::to_string(page) + " version " +
                                                     std::to_string(version));
                      }
                      if (--state->pending == 0) state->cv.notify_all();
                    }};
  Status s = engine_->submit(std::span<IoRequest>(&request, 1));
  if (!s.ok()) {
    // Not started: undo the bookkeeping for this one write.
    std::lock_guard<std::mutex> lock(batch.state_->mu);
    --batch.state_->pending;
    if (batch.state_->error.ok()) batch.state_->error = s;
  }
  return Status::Ok();
}

void PageStore::release_staged(Batch& batch) {
  {
    std::unique_lock<std::mutex> lock(batch.state_->mu);
    batch.state_->cv.wait(lock, [&] { return batch.state_->pending == 0; });
    batch.state_->error = Status::Ok();
    batch.state_->checksums.clear();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const PageRecord& r : batch.staged_) {
    const uint64_t g = global_slot(r.entry);
    if (!slots_[g].staged) continue;  // committed
    slots_[g].staged = false;
    --staged_count_;
    maybe_free_locked(g);
  }
  batch.staged_.clear();
}

Status PageStore::commit(Batch& batch, CommitTiming* timing) {
  STRATA_CHECK(batch.store_ == this) << "batch of another PageStore";
  CommitTiming t;
  const uint64_t start = NowNs();
  if (batch.staged_.empty()) {
    if (timing != nullptr) *timing = t;
    return Status::Ok();
  }
  const std::string what = "commit of " + std::to_string(batch.staged_.size()) + " page versions";
  Status status;
  {
    std::unique_lock<std::mutex> lock(batch.state_->mu);
    batch.state_->cv.wait(lock, [&] { return batch.state_->pending == 0; });
    status = batch.state_->error;
    for (size_t i = 0; i < batch.staged_.size(); ++i) {
      batch.staged_[i].entry.checksum = batch.state_->checksums[i];
    }
    batch.state_->checksums.clear();
  }
  t.wait_writes_ns = NowNs() - start;
  if (status.ok()) {
    const uint64_t sync_start = NowNs();
    std::vector<bool> touched(files_.size(), false);
    for (const PageRecord& r : batch.staged_) touched[r.entry.file] = true;
    for (size_t f = 0; f < files_.size() && status.ok(); ++f) {
      if (touched[f]) status = files_[f]->sync();
    }
    t.sync_files_ns = NowNs() - sync_start;
  }
  std::lock_guard<std::mutex> commit_lock(commit_mu_);
  if (status.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PageRecord& r : batch.staged_) {
      auto it = pages_.find(r.page);
      if (it != pages_.end() && it->second.version >= r.entry.version) {
        status = Status::FailedPrecondition(
            "page " + std::to_string(r.page) + ": version " + std::to_string(r.entry.version) +
            " is not newer than version " + std::to_string(it->second.version) +
            " committed meanwhile by another batch");
        break;
      }
    }
  }
  if (status.ok()) {
    status = catalog_->commit(batch.staged_, {}, &t.catalog_ns);
  }
  if (!status.ok()) {
    release_staged(batch);
    return status.with_context(what);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PageRecord& r : batch.staged_) {
      const uint64_t g = global_slot(r.entry);
      slots_[g].staged = false;
      --staged_count_;
      ++slots_[g].refs;
      ++referenced_count_;
      auto [it, inserted] = pages_.try_emplace(r.page, r.entry);
      if (!inserted) {
        const uint64_t old = global_slot(it->second);
        it->second = r.entry;
        if (--slots_[old].refs == 0) {
          --referenced_count_;
          maybe_free_locked(old);
        }
      }
    }
    ++commits_;
  }
  batch.staged_.clear();
  t.total_ns = NowNs() - start;
  if (timing != nullptr) *timing = t;
  return Status::Ok();
}

Status PageStore::read_page(PageId page, void* buffer, uint64_t buffer_bytes,
                            PageReadCallback done) {
  PageEntry entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pages_.find(page);
    if (it == pages_.end()) {
      return Status::NotFound("page " + std::to_string(page) + " has no committed version in " +
                              catalog_->path());
    }
    entry = it->second;
    ++slots_[global_slot(entry)].pins;
  }
  return start_read(page, entry, buffer, buffer_bytes, std::move(done));
}

std::future<Status> PageStore::read_page(PageId page, void* buffer, uint64_t buffer_bytes) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> future = promise->get_future();
  Status s = read_page(page, buffer, buffer_bytes,
                       [promise](const Status& st, const PageEntry&) { promise->set_value(st); });
  if (!s.ok()) promise->set_value(s);
  return future;
}

Status PageStore::read_record(const PageRecord& record, void* buffer, uint64_t buffer_bytes,
                              PageReadCallback done) {
  const PageEntry& e = record.entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.file >= files_.size() || e.slot >= layout_.slots_per_file ||
        slots_[global_slot(e)].refs == 0) {
      return Status::FailedPrecondition("page " + std::to_string(record.page) + " version " +
                                        std::to_string(e.version) +
                                        " is no longer referenced by the catalog");
    }
    ++slots_[global_slot(e)].pins;
  }
  return start_read(record.page, e, buffer, buffer_bytes, std::move(done));
}

Status PageStore::start_read(PageId page, const PageEntry& entry, void* buffer,
                             uint64_t buffer_bytes, PageReadCallback done) {
  const uint64_t g = global_slot(entry);
  auto unpin = [this, g] {
    std::lock_guard<std::mutex> lock(mu_);
    --slots_[g].pins;
    maybe_free_locked(g);
  };
  const uint64_t io_bytes = RoundUpToIoAlign(entry.length);
  if (buffer_bytes < io_bytes || !IsIoAligned(buffer)) {
    unpin();
    return Status::InvalidArgument("read of page " + std::to_string(page) + " needs a 4 KiB " +
                                   "aligned buffer of at least " + std::to_string(io_bytes) +
                                   " bytes");
  }
  const uint64_t offset = slot_offset(entry);
  IoRequest request{
      IoOp::kRead,
      engine_files_[entry.file],
      offset,
      buffer,
      io_bytes,
      [this, page, entry, buffer, offset, unpin, done = std::move(done)](const Status& io) {
        Status s = io;
        if (s.ok()) {
          const uint64_t actual = PageChecksum(buffer, entry.length);
          if (actual != entry.checksum) {
            s = Status::Corruption(
                "page " + std::to_string(page) + " version " + std::to_string(entry.version) +
                ": checksum mismatch at " + files_[entry.file]->path() + " offset " + Hex(offset) +
                " (expected " + Hex(entry.checksum) + ", got " + Hex(actual) +
                "); the file was changed outside Strata or the disk is failing; restore from a "
                "checkpoint");
          }
        } else {
          s = s.with_context("read of page " + std::to_string(page) + " version " +
                            std::to_string(entry.version));
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++pages_read_;
          if (s.code() == StatusCode::kCorruption) ++checksum_failures_;
        }
        unpin();
        done(s, entry);
      }};
  Status s = engine_->submit(std::span<IoRequest>(&request, 1));
  if (!s.ok()) unpin();
  return s;
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
