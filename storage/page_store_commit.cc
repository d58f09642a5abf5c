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
//
// This file is that protocol: batches, the staged write of a page version (step 1) and the commit
// (steps 2 to 4). Reads are in page_store_read.cc, recovery in page_store_recover.cc.
#include <algorithm>
#include <chrono>
#include <vector>

#include "core/util/option.h"
#include "storage/page_checksum.h"
#include "storage/page_store.h"
#include "storage/posix_file.h"

namespace strata::storage {
namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

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
  // Two cures (fewer checkpoints, a larger store); the option is the store's size.
  return AtFault(
      Option::kNvmeMem,
      Status::ResourceExhausted(
          "NVMe store is full: no free slot for page " + std::to_string(page) + " (all " +
          std::to_string(slots_.size()) + " slots of " + FormatBytes(layout_.page_bytes) +
          " are referenced by pages, manifests or uncommitted writes); drop old checkpoints "
          "(strata ckpt prune CKPT_DIR " +
          Mention(Option::kKeep) + " 1), or grow the store: reopen it (" +
          Mention(Option::kResume) + ") with a larger " + Mention(Option::kNvmeMem)),
      {{"slots", int64_t(slots_.size())},
       {"page_bytes", FaultNumber(layout_.page_bytes)},
       {"capacity_bytes", FaultNumber(slots_.size() * layout_.page_bytes)}});
}

Status PageStore::check_write(const Batch& batch, PageId page, const void* buffer,
                              uint64_t bytes) const {
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
  return Status::Ok();
}

Status PageStore::write_page_version(Batch& batch, PageId page, uint64_t version,
                                     const void* buffer, uint64_t bytes) {
  STRATA_CHECK(batch.store_ == this) << "batch of another PageStore";
  STRATA_RETURN_IF_ERROR(check_write(batch, page, buffer, bytes));
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

// Step 2, first half: waits for the batch's writes and copies their checksums into the entries.
Status PageStore::wait_for_writes(Batch& batch) {
  std::unique_lock<std::mutex> lock(batch.state_->mu);
  batch.state_->cv.wait(lock, [&] { return batch.state_->pending == 0; });
  const Status status = batch.state_->error;
  for (size_t i = 0; i < batch.staged_.size(); ++i) {
    batch.staged_[i].entry.checksum = batch.state_->checksums[i];
  }
  batch.state_->checksums.clear();
  return status;
}

// Step 2, second half: the new versions are durable before anything points at them.
Status PageStore::sync_touched_files(const Batch& batch) {
  Status status;
  std::vector<bool> touched(files_.size(), false);
  for (const PageRecord& r : batch.staged_) touched[r.entry.file] = true;
  for (size_t f = 0; f < files_.size() && status.ok(); ++f) {
    if (touched[f]) status = files_[f]->sync();
  }
  return status;
}

// Under commit_mu_: no other batch committed a version as new as one of this batch's meanwhile.
Status PageStore::check_still_newer(const Batch& batch) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const PageRecord& r : batch.staged_) {
    auto it = pages_.find(r.page);
    if (it != pages_.end() && it->second.version >= r.entry.version) {
      return Status::FailedPrecondition(
          "page " + std::to_string(r.page) + ": version " + std::to_string(r.entry.version) +
          " is not newer than version " + std::to_string(it->second.version) +
          " committed meanwhile by another batch");
    }
  }
  return Status::Ok();
}

// Step 4, after the catalog's commit point: the in-memory mapping follows the catalog, and the
// old slots are released (a pinned one when its read finishes).
void PageStore::publish_committed(const Batch& batch) {
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

Status PageStore::commit(Batch& batch, CommitTiming* timing) {
  STRATA_CHECK(batch.store_ == this) << "batch of another PageStore";
  CommitTiming t;
  const uint64_t start = NowNs();
  if (batch.staged_.empty()) {
    if (timing != nullptr) *timing = t;
    return Status::Ok();
  }
  const std::string what = "commit of " + std::to_string(batch.staged_.size()) + " page versions";
  Status status = wait_for_writes(batch);
  t.wait_writes_ns = NowNs() - start;
  if (status.ok()) {
    const uint64_t sync_start = NowNs();
    status = sync_touched_files(batch);
    t.sync_files_ns = NowNs() - sync_start;
  }
  std::lock_guard<std::mutex> commit_lock(commit_mu_);
  if (status.ok()) status = check_still_newer(batch);
  // Step 3, the commit point.
  if (status.ok()) status = catalog_->commit(batch.staged_, {}, &t.catalog_ns);
  if (!status.ok()) {
    release_staged(batch);
    return status.with_context(what);
  }
  publish_committed(batch);
  batch.staged_.clear();
  t.total_ns = NowNs() - start;
  if (timing != nullptr) *timing = t;
  return Status::Ok();
}

}  // namespace strata::storage
