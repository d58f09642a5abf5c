#include "storage/catalog.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "storage/catalog_codec.h"
#include "storage/posix_file.h"

namespace strata::storage {
namespace {

constexpr const char* kFormatKey = "meta/format";
constexpr const char* kLayoutKey = "meta/layout";
constexpr const char* kManifestPrefix = "m/";

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  if (s.IsNotFound()) return Status::NotFound(what + ": " + s.ToString());
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  if (s.IsNoSpace()) return Status::ResourceExhausted(what + ": " + s.ToString());
  if (s.IsIOError()) return Status::IoError(what + ": " + s.ToString());
  if (s.IsBusy() || s.IsTryAgain()) return Status::FailedPrecondition(what + ": " + s.ToString());
  return Status::Internal(what + ": " + s.ToString());
}

rocksdb::Options DbOptions(bool create) {
  rocksdb::Options options;
  options.create_if_missing = create;
  options.paranoid_checks = true;
  options.max_background_jobs = 2;
  options.keep_log_file_num = 2;
  options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // Note [Disk space] (page_store_open.cc): no preallocation (RocksDB's default reserved ~70 MiB
  // for its log, whatever the disk had left) and a small memtable, so the catalog's footprint is
  // what it holds.
  options.allow_fallocate = false;
  options.write_buffer_size = 4 << 20;
  // A kill can cut only the log's last record (every commit is a sync write); damage anywhere
  // else must fail the open, not silently drop the commits after it (RocksDB's default,
  // point-in-time recovery, did: a damaged log surfaced later as a missing manifest).
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  return options;
}

// The newest file of `dir` whose name starts with `prefix` and ends with `suffix` ("" if none).
std::string NewestFile(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  std::string best;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 && name > best) {
      best = name;
    }
  }
  return best;
}

constexpr const char* kLostCatalog =
    "; the store's page mappings and checkpoints cannot be read as they are: restore the "
    "catalog directory from a backup, or start a new store in an empty --nvme-dir";

// Note [Catalog damage]: a catalog that cannot be opened is explained by which of RocksDB's own
// files is at fault, since RocksDB's words ("checksum mismatch", a missing key) do not say.
Status ExplainOpenFailure(const std::string& path, const rocksdb::Status& s) {
  if (!PathExists(path + "/CURRENT")) {
    const std::string manifest = NewestFile(path, "MANIFEST-", "");
    return Status::Corruption(
        "catalog " + path + " has lost its CURRENT file (RocksDB's pointer to its MANIFEST)" +
        (manifest.empty() ? std::string(kLostCatalog)
                          : "; if nothing else is damaged, restore it with: printf '" + manifest +
                                "\\n' > " + path + "/CURRENT (the newest MANIFEST there)"));
  }
  const std::string text = s.ToString();
  if (s.IsCorruption() && text.find("MANIFEST") != std::string::npos) {
    return Status::Corruption("catalog " + path + ": its MANIFEST file is damaged or truncated (" +
                              text + ")" + kLostCatalog);
  }
  if (s.IsCorruption() && !NewestFile(path, "", ".log").empty()) {
    return Status::Corruption(
        "catalog " + path + ": its write-ahead log (" + path + "/" + NewestFile(path, "", ".log") +
        ") is damaged in the middle, not just cut by a crash (" + text +
        "), so the commits after the damage cannot be replayed" + kLostCatalog);
  }
  return FromRocks(s, "open catalog " + path);
}

}  // namespace

std::string Catalog::PathFor(const std::string& first_dir) {
  if (!first_dir.empty() && first_dir.back() == '/') return first_dir + kCatalogDirName;
  return first_dir + "/" + kCatalogDirName;
}

// The directory, not its CURRENT file: a catalog that lost CURRENT is a damaged store to report
// (Note [Catalog damage]), not a missing one to create over.
bool Catalog::Exists(const std::string& path) { return PathExists(path); }

Result<StoreLayout> Catalog::ReadLayout(const std::string& path) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(DbOptions(false), path, &raw);
  if (!s.ok()) return ExplainOpenFailure(path, s);
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string format, layout;
  s = db->Get(rocksdb::ReadOptions(), kFormatKey, &format);
  if (s.IsNotFound() && !NewestFile(path, "", ".sst").empty()) {
    // Tables exist but the MANIFEST that lists them does not name them.
    return Status::Corruption("catalog " + path +
                              " opened without its format record although it holds tables: its "
                              "MANIFEST file is damaged or truncated" + std::string(kLostCatalog));
  }
  if (s.IsNotFound()) {
    return Status::Corruption("catalog " + path +
                              " has no format version: it is not a Strata store (or its "
                              "creation was interrupted); move it away and start a new store");
  }
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read meta/format from catalog " + path));
  s = db->Get(rocksdb::ReadOptions(), kLayoutKey, &layout);
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "read meta/layout from " + path);
  return DecodeLayout(path, format, layout);
}

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& path, bool create) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(DbOptions(create), path, &raw);
  if (!s.ok()) return create ? FromRocks(s, "create catalog " + path) : ExplainOpenFailure(path, s);
  return std::unique_ptr<Catalog>(new Catalog(path, std::unique_ptr<rocksdb::DB>(raw)));
}

Catalog::Catalog(std::string path, std::unique_ptr<rocksdb::DB> db)
    : path_(std::move(path)), db_(std::move(db)) {}

Catalog::~Catalog() {
  if (db_) db_->Close().PermitUncheckedError();
}

Status Catalog::write_sync(rocksdb::WriteBatch& batch, uint64_t* write_ns) {
  rocksdb::WriteOptions options;
  options.sync = true;
  const auto start = std::chrono::steady_clock::now();
  rocksdb::Status s = db_->Write(options, &batch);
  if (write_ns != nullptr) {
    *write_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count());
  }
  return FromRocks(s, "write catalog " + path_);
}

Status Catalog::write_layout(const StoreLayout& layout) {
  rocksdb::WriteBatch batch;
  batch.Put(kLayoutKey, EncodeLayout(layout));
  batch.Put(kFormatKey, EncodeFormat(layout.format_version));
  return write_sync(batch, nullptr);
}

Result<StoreLayout> Catalog::read_layout() const {
  std::string format, layout;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), kFormatKey, &format);
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read meta/format from catalog " + path_));
  s = db_->Get(rocksdb::ReadOptions(), kLayoutKey, &layout);
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read meta/layout from catalog " + path_));
  return DecodeLayout(path_, format, layout);
}

Status Catalog::for_each_page(const std::function<void(const PageRecord&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const rocksdb::Slice prefix(kPageKeyPrefix.data(), kPageKeyPrefix.size());
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    STRATA_ASSIGN_OR_RETURN(
        const PageRecord record,
        DecodePageRecord(path_, it->key().ToStringView(), it->value().ToStringView()));
    fn(record);
  }
  return FromRocks(it->status(), "scan catalog " + path_);
}

Status Catalog::commit(std::span<const PageRecord> updates, std::span<const PageId> erased,
                       uint64_t* write_ns) {
  rocksdb::WriteBatch batch;
  for (const PageRecord& r : updates) batch.Put(EncodePageKey(r.page), EncodePageEntry(r.entry));
  for (PageId page : erased) batch.Delete(EncodePageKey(page));
  return write_sync(batch, write_ns);
}

Status Catalog::put_manifest(const std::string& name, std::span<const PageRecord> records) {
  rocksdb::WriteBatch batch;
  batch.Put(std::string(kManifestPrefix) + name, EncodeManifest(records));
  return write_sync(batch, nullptr);
}

Result<std::vector<PageRecord>> Catalog::get_manifest(const std::string& name) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), std::string(kManifestPrefix) + name, &value);
  if (s.IsNotFound()) {
    return Status::NotFound("manifest '" + name + "' does not exist in catalog " + path_);
  }
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read manifest '" + name + "' from " + path_));
  return DecodeManifest(path_, name, value);
}

Status Catalog::delete_manifest(const std::string& name) {
  rocksdb::WriteBatch batch;
  batch.Delete(std::string(kManifestPrefix) + name);
  return write_sync(batch, nullptr);
}

Result<std::vector<std::string>> Catalog::manifest_names() const {
  std::vector<std::string> names;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const rocksdb::Slice prefix(kManifestPrefix);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    names.emplace_back(it->key().data() + prefix.size(), it->key().size() - prefix.size());
  }
  STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "scan catalog " + path_));
  return names;
}

Status Catalog::put_meta(const std::string& name, const std::string& value) {
  rocksdb::WriteBatch batch;
  batch.Put("meta/" + name, value);
  return write_sync(batch, nullptr);
}

Result<std::optional<std::string>> Catalog::get_meta(const std::string& name) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), "meta/" + name, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read meta/" + name + " from catalog " + path_));
  return std::optional<std::string>(std::move(value));
}

}  // namespace strata::storage
