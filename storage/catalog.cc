#include "storage/catalog.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cstring>

#include "storage/posix_file.h"

namespace strata::storage {
namespace {

constexpr const char* kFormatKey = "meta/format";
constexpr const char* kLayoutKey = "meta/layout";
constexpr const char* kPagePrefix = "p/";
constexpr const char* kManifestPrefix = "m/";
constexpr size_t kEntryBytes = 4 + 8 * 4;
constexpr size_t kRecordBytes = 8 + kEntryBytes;

// Little-endian encoders for values; page keys are big-endian so that they sort by id.
void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

std::string PageKey(PageId page) {
  std::string key = kPagePrefix;
  for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(page >> (8 * i)));
  return key;
}

void PutEntry(std::string& out, const PageEntry& e) {
  PutU32(out, e.file);
  PutU64(out, e.slot);
  PutU64(out, e.version);
  PutU64(out, e.checksum);
  PutU64(out, e.length);
}
PageEntry GetEntry(const char* p) {
  return PageEntry{GetU32(p), GetU64(p + 4), GetU64(p + 12), GetU64(p + 20), GetU64(p + 28)};
}

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
  return options;
}

Result<StoreLayout> DecodeLayout(const std::string& path, const std::string& format,
                                 const std::string& layout) {
  StoreLayout out;
  if (format.size() != 4) {
    return Status::Corruption("catalog " + path + ": key meta/format is malformed");
  }
  out.format_version = GetU32(format.data());
  if (layout.size() < 20) {
    // Another format may lay out meta/layout differently: the caller reports the version.
    if (out.format_version != kCatalogFormatVersion) return out;
    return Status::Corruption("catalog " + path + ": key meta/layout is malformed");
  }
  out.page_bytes = GetU64(layout.data());
  out.slots_per_file = GetU64(layout.data() + 8);
  const uint32_t dirs = GetU32(layout.data() + 16);
  size_t pos = 20;
  for (uint32_t i = 0; i < dirs; ++i) {
    if (pos + 4 > layout.size()) {
      if (out.format_version != kCatalogFormatVersion) return out;
      return Status::Corruption("catalog " + path + ": key meta/layout is truncated");
    }
    const uint32_t n = GetU32(layout.data() + pos);
    pos += 4;
    if (pos + n > layout.size()) {
      if (out.format_version != kCatalogFormatVersion) return out;
      return Status::Corruption("catalog " + path + ": key meta/layout is truncated");
    }
    out.dirs.emplace_back(layout.data() + pos, n);
    pos += n;
  }
  return out;
}

}  // namespace

std::string Catalog::PathFor(const std::string& first_dir) {
  if (!first_dir.empty() && first_dir.back() == '/') return first_dir + kCatalogDirName;
  return first_dir + "/" + kCatalogDirName;
}

bool Catalog::Exists(const std::string& path) { return PathExists(path + "/CURRENT"); }

Result<StoreLayout> Catalog::ReadLayout(const std::string& path) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(DbOptions(false), path, &raw);
  STRATA_RETURN_IF_ERROR(FromRocks(s, "open catalog " + path + " read-only"));
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string format, layout;
  s = db->Get(rocksdb::ReadOptions(), kFormatKey, &format);
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
  STRATA_RETURN_IF_ERROR(FromRocks(s, "open catalog " + path));
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
  std::string format, value;
  PutU32(format, layout.format_version);
  PutU64(value, layout.page_bytes);
  PutU64(value, layout.slots_per_file);
  PutU32(value, static_cast<uint32_t>(layout.dirs.size()));
  for (const std::string& d : layout.dirs) {
    PutU32(value, static_cast<uint32_t>(d.size()));
    value += d;
  }
  rocksdb::WriteBatch batch;
  batch.Put(kLayoutKey, value);
  batch.Put(kFormatKey, format);
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
  const rocksdb::Slice prefix(kPagePrefix);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const rocksdb::Slice key = it->key();
    const rocksdb::Slice value = it->value();
    if (key.size() != prefix.size() + 8 || value.size() != kEntryBytes) {
      return Status::Corruption("catalog " + path_ + ": malformed page record (key of " +
                                std::to_string(key.size()) + " bytes, value of " +
                                std::to_string(value.size()) + ")");
    }
    PageId page = 0;
    for (size_t i = 0; i < 8; ++i) {
      page = (page << 8) | static_cast<uint8_t>(key.data()[prefix.size() + i]);
    }
    fn(PageRecord{page, GetEntry(value.data())});
  }
  return FromRocks(it->status(), "scan catalog " + path_);
}

Status Catalog::commit(std::span<const PageRecord> updates, std::span<const PageId> erased,
                       uint64_t* write_ns) {
  rocksdb::WriteBatch batch;
  std::string value;
  for (const PageRecord& r : updates) {
    value.clear();
    PutEntry(value, r.entry);
    batch.Put(PageKey(r.page), value);
  }
  for (PageId page : erased) batch.Delete(PageKey(page));
  return write_sync(batch, write_ns);
}

Status Catalog::put_manifest(const std::string& name, std::span<const PageRecord> records) {
  std::string value;
  value.reserve(8 + records.size() * kRecordBytes);
  PutU64(value, records.size());
  for (const PageRecord& r : records) {
    PutU64(value, r.page);
    PutEntry(value, r.entry);
  }
  rocksdb::WriteBatch batch;
  batch.Put(std::string(kManifestPrefix) + name, value);
  return write_sync(batch, nullptr);
}

Result<std::vector<PageRecord>> Catalog::get_manifest(const std::string& name) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), std::string(kManifestPrefix) + name, &value);
  if (s.IsNotFound()) {
    return Status::NotFound("manifest '" + name + "' does not exist in catalog " + path_);
  }
  STRATA_RETURN_IF_ERROR(FromRocks(s, "read manifest '" + name + "' from " + path_));
  if (value.size() < 8 || (value.size() - 8) % kRecordBytes != 0 ||
      GetU64(value.data()) != (value.size() - 8) / kRecordBytes) {
    return Status::Corruption("manifest '" + name + "' in catalog " + path_ + " is malformed");
  }
  std::vector<PageRecord> records(GetU64(value.data()));
  for (size_t i = 0; i < records.size(); ++i) {
    const char* p = value.data() + 8 + i * kRecordBytes;
    records[i] = PageRecord{GetU64(p), GetEntry(p + 8)};
  }
  return records;
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
