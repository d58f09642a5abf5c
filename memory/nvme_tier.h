// NvmeTier: the NVMe copy of pages as the memory manager sees it. The manager depends on this
// small interface only; PageStoreNvmeTier (memory/page_store_nvme_tier.h) adapts the storage
// layer's copy-on-write PageStore to it, and tests may supply an in-memory implementation.
//
// Semantics (copy-on-write, as the PageStore gives them):
// - stage_write(page, buffer) starts writing a new version of `page` from `buffer`
//   (page_bytes() long, 4 KiB aligned) into the open batch. The new version is not readable
//   and the buffer must stay unchanged until the batch holding it is committed. At most one
//   staged version per page in all batches not yet committed (the manager never stages a page
//   twice before its commit).
// - seal() closes the open batch and returns it; later stage_write()s go to a new batch. It
//   does no I/O, so the manager seals under its own bookkeeping and commits with no lock held
//   (Note [Locking] in memory_manager.cc): the sealed batch names exactly the pages it holds.
// - commit(batch) makes every version of `batch` current, atomically and durably, and returns
//   the first error of any of its writes or of the commit itself. On error no version of the
//   batch became current and the previously committed versions stay readable. Batches may be
//   committed from several threads; their pages are disjoint.
// - read(page, buffer) reads the last committed version; NotFound when the page never was
//   committed.
// - Snapshots (checkpoints): save_snapshot(name) durably records every page's committed
//   version under `name`; those versions stay on disk until the snapshot is deleted. A store
//   is reopened at a snapshot by OpenNvmeTier (memory/open_nvme_tier.h).
// Threads: every method may be called from any thread. Errors are Statuses naming the page,
// the file and the offset.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "memory/page_plan.h"

namespace strata::memory {

struct NvmeTierStats {
  uint64_t capacity_bytes = 0;  // slot bytes available to pages (the NVMe budget)
  uint64_t used_bytes = 0;      // slots holding committed or staged versions
  uint64_t peak_bytes = 0;
};

// Versions staged together, sealed by NvmeTier::seal(). Implementations derive from it.
class NvmeBatch {
 public:
  virtual ~NvmeBatch() = default;
  // The pages with a version in this batch, in staging order.
  const std::vector<PageId>& pages() const { return pages_; }

 protected:
  std::vector<PageId> pages_;
};

class NvmeTier {
 public:
  virtual ~NvmeTier() = default;
  virtual uint64_t page_bytes() const = 0;
  // Registers a long-lived host buffer (the pinned host pool) for faster I/O (io_uring fixed
  // buffers). Both are optional to honour: the default does nothing.
  virtual Status register_buffer(void* /*buffer*/, uint64_t /*bytes*/) { return Status::Ok(); }
  virtual void unregister_buffer(void* /*buffer*/) {}

  [[nodiscard]] virtual Status stage_write(PageId page, const void* buffer) = 0;
  virtual std::unique_ptr<NvmeBatch> seal() = 0;
  [[nodiscard]] virtual Status commit(std::unique_ptr<NvmeBatch> batch) = 0;
  // Forgets every staged version without committing it, once its write no longer reads its
  // buffer (the manager calls it before it frees the buffers). The default has nothing to wait
  // for: an implementation that copies the buffer in stage_write.
  virtual void drop_staged() {}
  // The future holds the read's Status; the buffer belongs to the tier until it is ready.
  virtual std::future<Status> read(PageId page, void* buffer) = 0;

  // Pages with a committed version now (a reopened store). The manager marks them as having a
  // valid NVMe copy at creation, so a resumed run reads them instead of zeros.
  virtual std::vector<PageId> committed_pages() const = 0;

  // Snapshots; the defaults say the tier keeps none.
  [[nodiscard]] virtual Status save_snapshot(const std::string& name);
  virtual Result<std::vector<std::string>> snapshot_names() const;
  [[nodiscard]] virtual Status delete_snapshot(const std::string& name);

  virtual NvmeTierStats stats() const = 0;
};

}  // namespace strata::memory
