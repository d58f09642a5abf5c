// The bytes of the catalog's keys and values (storage/catalog.h names the keys), apart from
// RocksDB so that they can be tested and fuzzed on byte buffers (tests/fuzz/).
//
//   meta/format  value: u32 format version
//   meta/layout  value: u64 page bytes, u64 slots per file, u32 directory count, then per
//                directory u32 length + its bytes
//   p/<id>       key: "p/" + the page id as big-endian u64 (keys sort by id)
//                value: PageEntry = u32 file, u64 slot, u64 version, u64 checksum, u64 length
//   m/<name>     value: u64 record count, then per record u64 page id + PageEntry
// Integers in values are little-endian.
//
// Contract of every Decode*: it reads only the bytes it is given, allocates only in proportion
// to them (a count in the input is believed only once the input holds that many records), and
// returns Corruption, naming the key and the catalog `path`, for bytes that Encode* would not
// have written. Encode* then Decode* gives back the same value, and Decode* then Encode* gives
// back the same bytes. Free functions without state: any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"
#include "storage/catalog.h"

namespace strata::storage {

inline constexpr std::string_view kPageKeyPrefix = "p/";
inline constexpr size_t kPageEntryBytes = 4 + 8 * 4;
inline constexpr size_t kPageRecordBytes = 8 + kPageEntryBytes;

std::string EncodeFormat(uint32_t format_version);
std::string EncodeLayout(const StoreLayout& layout);
// `format` and `layout` are the values of meta/format and meta/layout. A store of another
// format version is returned with what could be read (the caller reports the version); for
// this version, a layout that does not decode exactly is Corruption.
Result<StoreLayout> DecodeLayout(const std::string& path, std::string_view format,
                                 std::string_view layout);

std::string EncodePageKey(PageId page);
std::string EncodePageEntry(const PageEntry& entry);
// A p/ record: its whole key (prefix included) and its value.
Result<PageRecord> DecodePageRecord(const std::string& path, std::string_view key,
                                    std::string_view value);

std::string EncodeManifest(std::span<const PageRecord> records);
// The value of m/<name>.
Result<std::vector<PageRecord>> DecodeManifest(const std::string& path, const std::string& name,
                                               std::string_view value);

}  // namespace strata::storage
