// Catalog: the durable index of the NVMe store, in RocksDB (<first --nvme-dir>/strata.catalog).
//
//   meta/format          -> format version (kCatalogFormatVersion)
//   meta/layout          -> page size, slots per slot file, the slot-file directories in order
//   p/<page id, BE u64>  -> PageEntry {slot file, slot, version, xxh3-64 checksum, length}
//   m/<name>             -> manifest: the PageRecords of every page at the time it was saved
//   meta/<name>          -> small values of the store (put_meta/get_meta), e.g. meta/store-id
//
// Contract:
// - Every mutation is one rocksdb::WriteBatch written with sync=true: when it returns OK it is
//   durable and atomic (all of its records or none survive a crash).
// - ReadLayout() opens the database read-only: inspecting a store writes nothing.
// - A value that does not decode is Corruption naming the key and the catalog path.
// - A failed write poisons the catalog (Note [Poisoned catalog] in catalog.cc): the RocksDB
//   handle is closed at once, and every later call, read or write, returns that first error
//   without touching RocksDB. What was committed before the failure stays on disk; reopening
//   the catalog (with the disk fixed) continues from it.
// - RocksDB's own log goes to the "storage" logger at debug level, never to a file beside the
//   catalog, and RocksDB never recovers from a background error by itself (both would write to
//   a full disk behind the caller's back, and Debian's RocksDB asserts when a file it failed to
//   write is written again).
// - Thread-safe: any method from any thread (RocksDB calls share `mu_`; poisoning takes it
//   exclusively to close the handle). Callers serialise commits that must be ordered. The
//   function given to for_each_page must not call the catalog.
// - The RocksDB handle is owned (unique_ptr) and closed by the destructor, or when poisoned.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace rocksdb {
class DB;
class Status;
class WriteBatch;
}  // namespace rocksdb

namespace strata::storage {

inline constexpr uint32_t kCatalogFormatVersion = 1;
inline constexpr const char* kCatalogDirName = "strata.catalog";

using PageId = uint64_t;

struct PageEntry {
  uint32_t file = 0;      // index of the slot file (position of its --nvme-dir)
  uint64_t slot = 0;      // slot within that file
  uint64_t version = 0;   // caller-chosen, strictly increasing per page (e.g. the step)
  uint64_t checksum = 0;  // XXH3-64 of the first `length` bytes
  uint64_t length = 0;    // bytes of payload, <= page size
  friend bool operator==(const PageEntry&, const PageEntry&) = default;
};

struct PageRecord {
  PageId page = 0;
  PageEntry entry;
};

struct StoreLayout {
  uint32_t format_version = kCatalogFormatVersion;
  uint64_t page_bytes = 0;
  uint64_t slots_per_file = 0;
  std::vector<std::string> dirs;
};

class Catalog {
 public:
  static std::string PathFor(const std::string& first_dir);
  // True when a catalog database exists at `path`.
  static bool Exists(const std::string& path);
  // Reads the format version and layout without writing anything.
  static Result<StoreLayout> ReadLayout(const std::string& path);
  // Opens (or with `create`, creates) the catalog database.
  static Result<std::unique_ptr<Catalog>> Open(const std::string& path, bool create);
  ~Catalog();

  const std::string& path() const { return path_; }

  [[nodiscard]] Status write_layout(const StoreLayout& layout);
  Result<StoreLayout> read_layout() const;

  // Calls fn for every current page mapping, in page order.
  [[nodiscard]] Status for_each_page(const std::function<void(const PageRecord&)>& fn) const;

  // One sync WriteBatch: puts `updates`, deletes `erased`. `write_ns` (optional) receives the
  // time spent in DB::Write.
  [[nodiscard]] Status commit(std::span<const PageRecord> updates, std::span<const PageId> erased,
                              uint64_t* write_ns = nullptr);

  [[nodiscard]] Status put_manifest(const std::string& name, std::span<const PageRecord> records);
  Result<std::vector<PageRecord>> get_manifest(const std::string& name) const;
  [[nodiscard]] Status delete_manifest(const std::string& name);
  Result<std::vector<std::string>> manifest_names() const;

  // Small named values of the store itself (key meta/<name>, e.g. the store id), one sync
  // WriteBatch per put. get_meta is nullopt when the key was never put.
  [[nodiscard]] Status put_meta(const std::string& name, const std::string& value);
  Result<std::optional<std::string>> get_meta(const std::string& name) const;

  // OK, or the first failed write's error once the catalog is poisoned (every call then
  // returns it).
  Status poisoned() const;

 private:
  Catalog(std::string path, std::unique_ptr<rocksdb::DB> db);
  Status write_sync(rocksdb::WriteBatch& batch, uint64_t* write_ns);
  // Records the first failed write, closes the handle, returns the first error.
  Status poison(const rocksdb::Status& failed);

  std::string path_;
  mutable std::shared_mutex mu_;     // shared: any use of db_; exclusive: poisoning
  Status poison_;                    // guarded by mu_; OK until a write fails
  std::unique_ptr<rocksdb::DB> db_;  // null once poisoned
};

}  // namespace strata::storage
