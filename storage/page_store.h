// PageStore: the NVMe tier. Fixed-size pages live in slots of preallocated slot files (one per
// --nvme-dir, pages striped across them); a RocksDB catalog maps each page to its current
// version; named manifests (checkpoints) pin versions. See docs/storage.md.
//
// Copy-on-write (Note [Commit protocol] in page_store_commit.cc): write_page_version() writes the new
// version into a free slot; commit() waits for those writes, fdatasyncs the slot files, flips
// every mapping of the batch in one synchronous RocksDB WriteBatch, and only then returns the
// old slots to the free list. A crash at any instant leaves the last committed batch intact; on
// Open() every slot not referenced by the catalog (current mappings and manifests) is free.
// Every read verifies the XXH3-64 checksum; a mismatch is Corruption naming the page, the file
// and the offset.
//
// Threads: every PageStore method is thread-safe. Commits (and manifest operations) are
// serialised among themselves; reads and writes of pages run concurrently with them. A Batch
// belongs to one thread at a time. Read callbacks run on an I/O engine thread and must not block
// on other I/O of this store.
//
// Buffers: page buffers are host memory, 4 KiB aligned, at least RoundUpToIoAlign(bytes) long
// (the tail up to the 4 KiB boundary is written to disk too). Register long-lived buffers with
// engine().register_buffer() so that I/O on them uses io_uring fixed buffers. A write buffer
// must stay unchanged until the batch is committed or destroyed; a read buffer belongs to the
// store until the read completes.
//
// Lifetimes: every Batch must be destroyed (committed or not) before the PageStore.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/util/sizes.h"
#include "core/util/status.h"
#include "storage/catalog.h"
#include "storage/fault_injector.h"
#include "storage/io_engine.h"
#include "storage/slot_file.h"
#include "storage/store_lock.h"

namespace strata::storage {

inline constexpr uint64_t kDefaultPageBytes = 16 * kMiB;

// Free bytes the first directory of a store of `slots` slots keeps for its catalog's log, tables
// and checkpoint manifests (Note [Disk space] in page_store_open.cc).
uint64_t CatalogHeadroomBytes(uint64_t slots);

struct PageStoreOptions {
  // One slot file per directory; the catalog lives in dirs[0]. Order matters on reopen.
  std::vector<std::string> dirs;
  // Multiple of 4 KiB. A store refuses to open with another page size.
  uint64_t page_bytes = kDefaultPageBytes;
  // For a new store: total slot bytes across all dirs (split evenly, rounded up to whole
  // pages). An existing store grows to it when it is larger (Note [Growing a store] in
  // page_store_open.cc) and never shrinks.
  uint64_t capacity_bytes = 0;
  // Queue depth, request size, backend. The backend is forced to kSync when a filesystem
  // refuses O_DIRECT (and direct_io is kAuto).
  IoEngineOptions io;
  DirectIo direct_io = DirectIo::kAuto;
  // Borrowed; must outlive the store. Passed to the slot files and the I/O engine.
  FaultInjector* faults = nullptr;
};

struct PageStoreStats {
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t pages_read = 0;
  uint64_t pages_written = 0;  // page versions written (committed or not)
  uint64_t commits = 0;
  uint64_t pages = 0;  // pages with a current mapping
  uint64_t slots_total = 0;
  uint64_t slots_referenced = 0;  // by a current mapping or a manifest
  uint64_t slots_staged = 0;      // holding written, not yet committed versions
  uint64_t slots_free = 0;
  uint64_t slots_used_peak = 0;  // max over time of slots_total - slots_free
  uint64_t checksum_failures = 0;
};

// Where a commit spent its time (nanoseconds).
struct CommitTiming {
  uint64_t wait_writes_ns = 0;  // waiting for the batch's page writes
  uint64_t sync_files_ns = 0;   // fdatasync of the touched slot files
  uint64_t catalog_ns = 0;      // the synchronous RocksDB WriteBatch
  uint64_t total_ns = 0;
};

// Called once per read with its Status and the entry that was read.
using PageReadCallback = std::function<void(const Status&, const PageEntry&)>;

class PageStore {
 public:
  class Batch;

  // Opens the store over options.dirs, creating it when dirs[0] holds no catalog. The first
  // thing it does is take the store's lock (storage/store_lock.h); the store holds it until it
  // is destroyed. Errors (each one line naming what and where; nothing is written or lost):
  //   InvalidArgument    page size not a multiple of 4 KiB, no dirs, duplicate dirs, capacity
  //                      0 for a new store, a store of another page size or dir list, a new
  //                      store in a directory that holds other files;
  //   NotFound / FailedPrecondition   a missing or unwritable dir;
  //   FailedPrecondition the store is in use by another process (its pid named);
  //   ResourceExhausted  a dir without room for its slot file, or the first dir without the
  //                      catalog's headroom (Note [Disk space]; needed and free bytes named);
  //   NotSupported       O_DIRECT refused with DirectIo::kRequire; io_uring forced but absent;
  //                      a catalog of another format version;
  //   Corruption         a catalog or slot file that fails validation.
  static Result<std::unique_ptr<PageStore>> Open(const PageStoreOptions& options);
  ~PageStore();
  PageStore(const PageStore&) = delete;
  PageStore& operator=(const PageStore&) = delete;

  uint64_t page_bytes() const { return layout_.page_bytes; }
  IoEngine& engine() { return *engine_; }
  const std::vector<std::string>& dirs() const { return layout_.dirs; }
  // Path of the slot file of entry.file, for messages.
  const std::string& slot_path(uint32_t file) const;
  uint64_t slot_offset(const PageEntry& entry) const;

  Batch new_batch();

  // Starts writing `bytes` (1..page_bytes) of `buffer` as `version` of `page` into a free slot
  // and records it in `batch`. `version` must exceed the page's committed version (checked
  // again at commit), and a batch holds at most one version per page. ResourceExhausted when
  // no slot is free (every slot is referenced or staged). The write's own I/O error, if any, is
  // reported by commit().
  [[nodiscard]] Status write_page_version(Batch& batch, PageId page, uint64_t version,
                                          const void* buffer, uint64_t bytes);

  // Makes every version in `batch` current atomically and durably (see the header comment).
  // On error nothing of the batch is committed, its slots are free again and the previous
  // state stays readable. The batch is empty afterwards either way.
  [[nodiscard]] Status commit(Batch& batch, CommitTiming* timing = nullptr);

  // Reads the current version of `page` into `buffer` (buffer_bytes >= the page's length
  // rounded up to 4 KiB) and verifies its checksum. Errors returned directly: NotFound (no
  // such page), InvalidArgument (buffer); all others come through `done`.
  [[nodiscard]] Status read_page(PageId page, void* buffer, uint64_t buffer_bytes,
                                 PageReadCallback done);
  std::future<Status> read_page(PageId page, void* buffer, uint64_t buffer_bytes);
  // Reads a specific version (e.g. a record of load_manifest()) while the manifest or mapping
  // that names it still exists. FailedPrecondition if its slot is no longer referenced.
  [[nodiscard]] Status read_record(const PageRecord& record, void* buffer, uint64_t buffer_bytes,
                                   PageReadCallback done);

  Result<PageEntry> lookup(PageId page) const;
  // Snapshot of every current mapping, sorted by page id.
  std::vector<PageRecord> pages() const;

  // Manifests: a named, durable snapshot of every current mapping (a checkpoint). The
  // versions it names stay on disk until the manifest is deleted.
  [[nodiscard]] Status save_manifest(const std::string& name);
  Result<std::vector<PageRecord>> load_manifest(const std::string& name) const;
  Result<std::vector<std::string>> manifest_names() const;
  [[nodiscard]] Status delete_manifest(const std::string& name);
  // Makes the manifest's mappings the current ones (pages absent from it are dropped), in one
  // sync WriteBatch. Subsequent versions must exceed the restored ones.
  [[nodiscard]] Status restore_manifest(const std::string& name);

  // The store's identity: a random 64-bit id (16 hex digits) kept in the catalog
  // (meta/store-id), written durably the first time it is asked for (stores made before it
  // existed get theirs then). Records kept beside a store name it to tell one store from another.
  Result<std::string> store_id();

  PageStoreStats stats() const;

 private:
  struct SlotState {
    uint32_t refs = 0;  // current mapping + manifests
    uint32_t pins = 0;  // reads in flight
    bool staged = false;
  };
  struct BatchState;

  PageStore() = default;
  Status open_existing(const std::vector<std::string>& dirs, uint64_t capacity_bytes,
                       SlotFileOptions slot_options);
  Status grow_to(uint64_t capacity_bytes);
  Status create_new(const std::vector<std::string>& dirs, uint64_t capacity_bytes,
                    SlotFileOptions slot_options);
  Status start_engine(IoEngineOptions io, FaultInjector* faults);
  Status create_files(SlotFileOptions slot_options);
  Status recover();
  uint64_t global_slot(const PageEntry& e) const {
    return e.file * layout_.slots_per_file + e.slot;
  }
  Result<PageEntry> allocate_slot_locked(PageId page);
  void maybe_free_locked(uint64_t global);
  void release_staged(Batch& batch);
  // The steps of write_page_version and commit (Note [Commit protocol] in page_store_commit.cc).
  Status check_write(const Batch& batch, PageId page, const void* buffer, uint64_t bytes) const;
  Status wait_for_writes(Batch& batch);
  Status sync_touched_files(const Batch& batch);
  Status check_still_newer(const Batch& batch) const;  // commit_mu_ held
  void publish_committed(const Batch& batch);
  Status start_read(PageId page, const PageEntry& entry, void* buffer, uint64_t buffer_bytes,
                    PageReadCallback done);

  StoreLock lock_;  // first: released after everything else is closed
  StoreLayout layout_;
  std::vector<std::unique_ptr<SlotFile>> files_;
  std::vector<int> engine_files_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<IoEngine> engine_;

  std::mutex commit_mu_;   // serialises commits and manifest changes; taken before mu_
  mutable std::mutex mu_;  // guards everything below
  std::unordered_map<PageId, PageEntry> pages_;
  std::vector<SlotState> slots_;
  std::vector<std::vector<uint64_t>> free_;  // per file: free local slot numbers (a stack)
  uint64_t free_count_ = 0;
  uint64_t staged_count_ = 0;
  uint64_t referenced_count_ = 0;
  uint64_t used_peak_ = 0;
  uint64_t next_file_ = 0;
  uint64_t pages_read_ = 0;
  uint64_t pages_written_ = 0;
  uint64_t commits_ = 0;
  uint64_t checksum_failures_ = 0;
  uint64_t live_batches_ = 0;
};

// Page versions staged to be committed together. Move-only; used by one thread at a time.
// Destroying a batch that was not committed waits for its writes and frees their slots.
class PageStore::Batch {
 public:
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&&) = delete;
  Batch(const Batch&) = delete;
  ~Batch();
  size_t size() const { return staged_.size(); }
  bool empty() const { return staged_.empty(); }

 private:
  friend class PageStore;
  explicit Batch(PageStore* store);
  PageStore* store_;
  std::vector<PageRecord> staged_;
  std::shared_ptr<BatchState> state_;
};

}  // namespace strata::storage
