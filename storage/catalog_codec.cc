#include "storage/catalog_codec.h"

namespace strata::storage {
namespace {

// Little-endian encoders for values; page keys are big-endian so that they sort by id.
void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
// Callers check that 4 (8) bytes are there.
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

void PutEntry(std::string& out, const PageEntry& e) {
  PutU32(out, e.file);
  PutU64(out, e.slot);
  PutU64(out, e.version);
  PutU64(out, e.checksum);
  PutU64(out, e.length);
}
// Reads kPageEntryBytes at p.
PageEntry GetEntry(const char* p) {
  return PageEntry{GetU32(p), GetU64(p + 4), GetU64(p + 12), GetU64(p + 20), GetU64(p + 28)};
}

}  // namespace

std::string EncodeFormat(uint32_t format_version) {
  std::string out;
  PutU32(out, format_version);
  return out;
}

std::string EncodeLayout(const StoreLayout& layout) {
  std::string value;
  PutU64(value, layout.page_bytes);
  PutU64(value, layout.slots_per_file);
  PutU32(value, static_cast<uint32_t>(layout.dirs.size()));
  for (const std::string& d : layout.dirs) {
    PutU32(value, static_cast<uint32_t>(d.size()));
    value += d;
  }
  return value;
}

Result<StoreLayout> DecodeLayout(const std::string& path, std::string_view format,
                                 std::string_view layout) {
  StoreLayout out;
  if (format.size() != 4) {
    return Status::Corruption("catalog " + path + ": key meta/format is malformed");
  }
  out.format_version = GetU32(format.data());
  // Another format may lay out meta/layout differently: the caller reports the version.
  const bool other_format = out.format_version != kCatalogFormatVersion;
  if (layout.size() < 20) {
    if (other_format) return out;
    return Status::Corruption("catalog " + path + ": key meta/layout is malformed");
  }
  out.page_bytes = GetU64(layout.data());
  out.slots_per_file = GetU64(layout.data() + 8);
  const uint32_t dirs = GetU32(layout.data() + 16);
  size_t pos = 20;
  // Each directory takes at least 4 bytes, so the loop ends within layout.size() / 4 rounds
  // whatever `dirs` says, and nothing is reserved by it.
  for (uint32_t i = 0; i < dirs; ++i) {
    if (layout.size() - pos < 4) {
      if (other_format) return out;
      return Status::Corruption("catalog " + path + ": key meta/layout is truncated");
    }
    const uint32_t n = GetU32(layout.data() + pos);
    pos += 4;
    if (layout.size() - pos < n) {
      if (other_format) return out;
      return Status::Corruption("catalog " + path + ": key meta/layout is truncated");
    }
    out.dirs.emplace_back(layout.data() + pos, n);
    pos += n;
  }
  if (pos != layout.size() && !other_format) {
    return Status::Corruption("catalog " + path + ": key meta/layout has " +
                              std::to_string(layout.size() - pos) +
                              " bytes after its last directory");
  }
  return out;
}

std::string EncodePageKey(PageId page) {
  std::string key(kPageKeyPrefix);
  for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(page >> (8 * i)));
  return key;
}

std::string EncodePageEntry(const PageEntry& entry) {
  std::string value;
  PutEntry(value, entry);
  return value;
}

Result<PageRecord> DecodePageRecord(const std::string& path, std::string_view key,
                                    std::string_view value) {
  if (key.size() != kPageKeyPrefix.size() + 8 || !key.starts_with(kPageKeyPrefix) ||
      value.size() != kPageEntryBytes) {
    return Status::Corruption("catalog " + path + ": malformed page record (key of " +
                              std::to_string(key.size()) + " bytes, value of " +
                              std::to_string(value.size()) + ")");
  }
  PageId page = 0;
  for (size_t i = 0; i < 8; ++i) {
    page = (page << 8) | static_cast<uint8_t>(key[kPageKeyPrefix.size() + i]);
  }
  return PageRecord{page, GetEntry(value.data())};
}

std::string EncodeManifest(std::span<const PageRecord> records) {
  std::string value;
  value.reserve(8 + records.size() * kPageRecordBytes);
  PutU64(value, records.size());
  for (const PageRecord& r : records) {
    PutU64(value, r.page);
    PutEntry(value, r.entry);
  }
  return value;
}

Result<std::vector<PageRecord>> DecodeManifest(const std::string& path, const std::string& name,
                                               std::string_view value) {
  // The count is believed only when the value holds exactly that many records.
  if (value.size() < 8 || (value.size() - 8) % kPageRecordBytes != 0 ||
      GetU64(value.data()) != (value.size() - 8) / kPageRecordBytes) {
    return Status::Corruption("manifest '" + name + "' in catalog " + path + " is malformed");
  }
  std::vector<PageRecord> records((value.size() - 8) / kPageRecordBytes);
  for (size_t i = 0; i < records.size(); ++i) {
    const char* p = value.data() + 8 + i * kPageRecordBytes;
    records[i] = PageRecord{GetU64(p), GetEntry(p + 8)};
  }
  return records;
}

}  // namespace strata::storage
