// Reading committed page versions: a read pins its slot until it completes, so the slot is not
// reused under it (Note [Commit protocol] in page_store_commit.cc), and checks the version's
// checksum before it calls back.
#include <future>
#include <memory>

#include "storage/page_checksum.h"
#include "storage/page_store.h"
#include "storage/posix_file.h"

namespace strata::storage {
namespace {

std::string Hex(uint64_t v) { return HexOffset(v); }

}  // namespace

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

}  // namespace strata::storage
