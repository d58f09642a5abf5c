#include "storage/catalog.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
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

// Note [Poisoned catalog]
// Rationale. A disk that fills mid-run aborted the process (SIGABRT, `Assertion
// sync_without_flush_called_' failed in WritableFileWriter::AssertFalseAndGetStatusForPrevError):
// Debian's RocksDB keeps its asserts, and RocksDB asserts when a file writer that has failed
// once is used again. Reproduced on a 16 MiB loop-mounted ext4 (mkfs -m 0) filled under an open
// database, one process per trial (2026-11-27, RocksDB 7.8.3):
// - the writer that asserted was RocksDB's own info log, <catalog>/LOG: logging the failed write
//   hit ENOSPC there too, and the next line logged asserted. That next line came from Close()
//   ("Unable to Sync WAL"; so also from `delete db`), or, with no call from us at all, from the
//   SstFileManager's recovery thread ("Cannot clear hard error", every 5 s) and at exit();
// - FlushWAL() after a failed write asserts in the write-ahead log's writer;
// - a second Write() returns the first error; Get() and iterators still work;
// - with the info log off the disk and automatic recovery off, Close() after a failed write
//   returns "Seen error. Skip writing buffer." and nothing asserts: 0 aborts in 230 trials of
//   sync writes until one fails (random free space 0-1 MiB, write sizes, memtable sizes so that
//   flushes fail too, then Close and a reopen that found every acknowledged write), against 9
//   aborts in 30 trials with RocksDB's defaults.
// Approach. RocksDB logs to the "storage" logger (DbOptions: info_log), never to a file; a
// listener turns off its automatic recovery from background errors (which flushes, logs and
// retries on its own threads); and the first failed write poisons the catalog: the handle is
// closed at once (Close() is safe once nothing above can assert), and every later call returns
// that error without touching RocksDB. A torn record at the end of the write-ahead log is what
// a kill leaves too; kTolerateCorruptedTailRecords drops it when the catalog is reopened.
// Limitations. A poisoned catalog does not come back: the owner reopens the store (the CLI
// exits 1 and `--resume` continues from the last checkpoint). RocksDB's own messages are seen
// only with the storage logger at debug level (`--log-level debug`); the Status carries what a
// failed call met.

// RocksDB's log lines, at debug level of the "storage" logger (from any RocksDB thread; spdlog
// loggers are thread-safe).
class ForwardingLogger final : public rocksdb::Logger {
 public:
  explicit ForwardingLogger(std::string path)
      : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), path_(std::move(path)) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char text[1024];
    std::vsnprintf(text, sizeof text, format, ap);
    strata::Logger("storage")->debug("rocksdb ({}): {}", path_, text);
  }

 private:
  const std::string path_;
};

class NoAutoRecovery final : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status,
                            bool* auto_recovery) override {
    *auto_recovery = false;
  }
};

rocksdb::Options DbOptions(const std::string& path, bool create) {
  rocksdb::Options options;
  options.create_if_missing = create;
  options.paranoid_checks = true;
  options.max_background_jobs = 2;
  // Note [Poisoned catalog]: no LOG file on the store's disk, no recovery behind our back.
  options.info_log = std::make_shared<ForwardingLogger>(path);
  options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  options.listeners.push_back(std::make_shared<NoAutoRecovery>());
  options.max_bgerror_resume_count = 0;
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

// Corruption "<what>; the store's page mappings ... cannot be read ...": the store is lost, and
// the option to change is the directory (a new store in an empty one).
Status LostCatalog(const std::string& what) {
  return AtFault(
      Option::kNvmeDir,
      Status::Corruption(what +
                         "; the store's page mappings and checkpoints cannot be read as they are: "
                         "restore the catalog directory from a backup, or start a new store in an "
                         "empty " +
                         Mention(Option::kNvmeDir)));
}

// Note [Catalog damage]: a catalog that cannot be opened is explained by which of RocksDB's own
// files is at fault, since RocksDB's words ("checksum mismatch", a missing key) do not say.
Status ExplainOpenFailure(const std::string& path, const rocksdb::Status& s) {
  if (!PathExists(path + "/CURRENT")) {
    const std::string manifest = NewestFile(path, "MANIFEST-", "");
    const std::string what =
        "catalog " + path + " has lost its CURRENT file (RocksDB's pointer to its MANIFEST)";
    if (manifest.empty()) return LostCatalog(what);
    return Status::Corruption(what + "; if nothing else is damaged, restore it with: printf '" +
                              manifest + "\\n' > " + path + "/CURRENT (the newest MANIFEST there)");
  }
  const std::string text = s.ToString();
  if (s.IsCorruption() && text.find("MANIFEST") != std::string::npos) {
    return LostCatalog("catalog " + path + ": its MANIFEST file is damaged or truncated (" + text +
                       ")");
  }
  if (s.IsCorruption() && !NewestFile(path, "", ".log").empty()) {
    return LostCatalog("catalog " + path + ": its write-ahead log (" + path + "/" +
                       NewestFile(path, "", ".log") +
                       ") is damaged in the middle, not just cut by a crash (" + text +
                       "), so the commits after the damage cannot be replayed");
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
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(DbOptions(path, false), path, &raw);
  if (!s.ok()) return ExplainOpenFailure(path, s);
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string format, layout;
  s = db->Get(rocksdb::ReadOptions(), kFormatKey, &format);
  if (s.IsNotFound() && !NewestFile(path, "", ".sst").empty()) {
    // Tables exist but the MANIFEST that lists them does not name them.
    return LostCatalog("catalog " + path +
                       " opened without its format record although it holds tables: its "
                       "MANIFEST file is damaged or truncated");
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
  rocksdb::Status s = rocksdb::DB::Open(DbOptions(path, create), path, &raw);
  if (s.IsNoSpace()) {
    // The headroom check (Note [Disk space], page_store_open.cc) passed, but the disk filled.
    Result<uint64_t> free_bytes = FreeBytes(std::filesystem::path(path).parent_path().string());
    return Status::ResourceExhausted(
        "catalog " + path + ": No space left on device (ENOSPC) while opening it (" + s.ToString() +
        "), with " + (free_bytes.ok() ? FormatBytes(*free_bytes) : "no bytes") +
        " free there; free space on that filesystem and open the store again (its commits and "
        "checkpoints are as they were)");
  }
  if (!s.ok()) return create ? FromRocks(s, "create catalog " + path) : ExplainOpenFailure(path, s);
  return std::unique_ptr<Catalog>(new Catalog(path, std::unique_ptr<rocksdb::DB>(raw)));
}

Catalog::Catalog(std::string path, std::unique_ptr<rocksdb::DB> db)
    : path_(std::move(path)), db_(std::move(db)) {}

Catalog::~Catalog() {
  if (db_) db_->Close().PermitUncheckedError();
}

Status Catalog::poisoned() const {
  std::shared_lock lock(mu_);
  return poison_;
}

// Note [Poisoned catalog]. Called without mu_ held; the first failure wins.
Status Catalog::poison(const rocksdb::Status& failed) {
  std::unique_lock lock(mu_);
  if (!poison_.ok()) return poison_;
  const std::string what = "catalog " + path_ + ": ";
  const std::string after =
      "; the catalog is closed, and the store keeps every earlier commit and checkpoint: ";
  if (failed.IsNoSpace()) {
    poison_ = Status::ResourceExhausted(
        what + "No space left on device (ENOSPC): a write failed (" + failed.ToString() + ")" +
        after + "free space on that filesystem, then reopen the store");
  } else {
    const Status base = FromRocks(failed, what + "a write failed");
    poison_ = Status(base.code(), base.message() + after + "fix the disk, then reopen the store");
  }
  // Safe now that RocksDB writes no log file and never recovers by itself (reproduced).
  db_->Close().PermitUncheckedError();
  db_.reset();
  Logger("storage")->debug("{} poisoned: {}", path_, poison_.message());
  return poison_;
}

Status Catalog::write_sync(rocksdb::WriteBatch& batch, uint64_t* write_ns) {
  rocksdb::WriteOptions options;
  options.sync = true;
  rocksdb::Status s;
  {
    std::shared_lock lock(mu_);
    STRATA_RETURN_IF_ERROR(poison_);
    const auto start = std::chrono::steady_clock::now();
    s = db_->Write(options, &batch);
    if (write_ns != nullptr) {
      *write_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now() - start)
                                            .count());
    }
  }
  if (s.ok()) return Status::Ok();
  return poison(s);
}

Status Catalog::write_layout(const StoreLayout& layout) {
  rocksdb::WriteBatch batch;
  batch.Put(kLayoutKey, EncodeLayout(layout));
  batch.Put(kFormatKey, EncodeFormat(layout.format_version));
  return write_sync(batch, nullptr);
}

Result<StoreLayout> Catalog::read_layout() const {
  std::shared_lock lock(mu_);
  STRATA_RETURN_IF_ERROR(poison_);
  std::string format, layout;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), kFormatKey, &format);
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read meta/format from catalog " + path_));
  s = db_->Get(rocksdb::ReadOptions(), kLayoutKey, &layout);
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read meta/layout from catalog " + path_));
  return DecodeLayout(path_, format, layout);
}

Status Catalog::for_each_page(const std::function<void(const PageRecord&)>& fn) const {
  std::shared_lock lock(mu_);
  STRATA_RETURN_IF_ERROR(poison_);
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
  std::shared_lock lock(mu_);
  STRATA_RETURN_IF_ERROR(poison_);
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
  std::shared_lock lock(mu_);
  STRATA_RETURN_IF_ERROR(poison_);
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
  std::shared_lock lock(mu_);
  STRATA_RETURN_IF_ERROR(poison_);
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), "meta/" + name, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read meta/" + name + " from catalog " + path_));
  return std::optional<std::string>(std::move(value));
}

}  // namespace strata::storage
