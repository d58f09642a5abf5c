// Fuzz target catalog_record (see fuzz_targets.h).
#include <cstdint>
#include <string>

#include "core/util/check.h"
#include "storage/catalog_codec.h"
#include "tests/fuzz/fuzz_targets.h"

namespace strata::fuzz {
namespace {

using storage::PageRecord;
using storage::StoreLayout;

// meta/format is the first 4 bytes, meta/layout the rest.
bool Layout(std::string_view in) {
  const std::string_view format = in.substr(0, 4);
  const std::string_view layout = in.substr(format.size());
  Result<StoreLayout> out = storage::DecodeLayout("fuzz", format, layout);
  if (!out.ok()) return false;
  if (out->format_version != storage::kCatalogFormatVersion) return true;
  size_t dir_bytes = 0;
  for (const std::string& d : out->dirs) dir_bytes += 4 + d.size();
  STRATA_CHECK_LE(dir_bytes, layout.size()) << "directories larger than their value";
  STRATA_CHECK(storage::EncodeFormat(out->format_version) == format);
  STRATA_CHECK(storage::EncodeLayout(*out) == layout) << "meta/layout does not re-encode";
  return true;
}

// The key is the first 10 bytes (the size of a p/ key), the value the rest.
bool Page(std::string_view in) {
  const std::string_view key = in.substr(0, 10);
  const std::string_view value = in.substr(key.size());
  Result<PageRecord> out = storage::DecodePageRecord("fuzz", key, value);
  if (!out.ok()) return false;
  STRATA_CHECK(storage::EncodePageKey(out->page) == key) << "page key does not re-encode";
  STRATA_CHECK(storage::EncodePageEntry(out->entry) == value) << "page entry does not re-encode";
  return true;
}

bool Manifest(std::string_view value) {
  Result<std::vector<PageRecord>> out = storage::DecodeManifest("fuzz", "m", value);
  if (!out.ok()) return false;
  STRATA_CHECK_LE(out->size() * storage::kPageRecordBytes, value.size());
  STRATA_CHECK(storage::EncodeManifest(*out) == value) << "manifest does not re-encode";
  return true;
}

}  // namespace

bool FuzzCatalogRecord(std::string_view bytes) {
  if (bytes.empty()) return false;
  const std::string_view rest = bytes.substr(1);
  switch (static_cast<unsigned char>(bytes[0]) % 3) {
    case 0: return Layout(rest);
    case 1: return Page(rest);
    default: return Manifest(rest);
  }
}

}  // namespace strata::fuzz
