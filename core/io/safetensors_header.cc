// Parsing a safetensors file's header (the format and its errors: safetensors.h): its length,
// then the JSON, every tensor entry checked on its own and then against its neighbours (the
// tensors tile the data section). Reading and writing the files is in safetensors.cc.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/io/safetensors.h"
#include "core/io/safetensors_format.h"

namespace strata {
namespace {

using nlohmann::json;
using safetensors_internal::kMetadataKey;
using safetensors_internal::HeaderShapeString;

// The reference implementation refuses headers above 100 MB; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Bytes per element for every dtype of the format; nullopt for strings that are not one.
std::optional<uint64_t> DtypeBytes(const std::string& dtype) {
  static const std::map<std::string, uint64_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  auto it = kSizes.find(dtype);
  if (it == kSizes.end()) return std::nullopt;
  return it->second;
}

bool GetNonNegative(const json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    *out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer() && j.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(j.get<int64_t>());
    return true;
  }
  return false;
}

using Entry = SafetensorsEntry;

// The entry's "shape" into e.shape, and its product into e.numel.
Status ParseShape(const std::string& where, const json& j, Entry& e) {
  auto shape = j.find("shape");
  if (shape == j.end() || !shape->is_array()) {
    return Status::Corruption(where + ": missing or non-array \"shape\"");
  }
  for (const json& d : *shape) {
    // The message names the element, never dump()s the shape: dump() recurses once per level
    // of nesting, and a hostile header nests millions of levels deep (stack overflow).
    uint64_t dim;
    if (!GetNonNegative(d, &dim) || dim > static_cast<uint64_t>(INT64_MAX)) {
      return Status::Corruption(where + ": shape element " + std::to_string(e.shape.size()) +
                                " is not a non-negative integer (it is a JSON " + d.type_name() +
                                ")");
    }
    e.shape.push_back(static_cast<int64_t>(dim));
    if (__builtin_mul_overflow(e.numel, dim, &e.numel)) {
      return Status::Corruption(where + ": the product of shape " + HeaderShapeString(e.shape) +
                                " overflows 64 bits");
    }
  }
  return Status::Ok();
}

// Parses and validates one tensor entry of the header (not yet against its neighbours).
Result<Entry> ParseEntry(const std::string& path, const std::string& name, const json& j,
                         uint64_t data_bytes) {
  const std::string where = "safetensors file " + path + ", tensor '" + name + "'";
  if (!j.is_object()) return Status::Corruption(where + ": header entry is not a JSON object");
  Entry e;
  e.name = name;
  auto dtype = j.find("dtype");
  if (dtype == j.end() || !dtype->is_string()) {
    return Status::Corruption(where + ": missing or non-string \"dtype\"");
  }
  e.dtype = dtype->get<std::string>();
  const std::optional<uint64_t> elem_bytes = DtypeBytes(e.dtype);
  if (!elem_bytes) {
    return Status::Corruption(where + ": unknown dtype \"" + e.dtype +
                              "\"; the file is damaged or not a safetensors file");
  }
  if (e.dtype != "F32" && e.dtype != "F16" && e.dtype != "BF16") {
    return Status::NotSupported(where + " has dtype " + e.dtype +
                                "; Strata reads F32, F16 and BF16 tensors; convert the file "
                                "(e.g. tensor.float() in PyTorch) and save it again");
  }
  STRATA_RETURN_IF_ERROR(ParseShape(where, j, e));
  auto offsets = j.find("data_offsets");
  if (offsets == j.end() || !offsets->is_array() || offsets->size() != 2 ||
      !GetNonNegative((*offsets)[0], &e.begin) || !GetNonNegative((*offsets)[1], &e.end) ||
      e.begin > e.end) {
    return Status::Corruption(where +
                              ": \"data_offsets\" must be [begin, end] with "
                              "0 <= begin <= end");
  }
  if (e.end > data_bytes) {
    return Status::Corruption(where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                              std::to_string(e.end) + "] run past the end of the data section (" +
                              std::to_string(data_bytes) +
                              " bytes); the file is truncated; export it again");
  }
  uint64_t want;
  if (__builtin_mul_overflow(e.numel, *elem_bytes, &want) || want != e.end - e.begin) {
    return Status::Corruption(where + ": shape " + HeaderShapeString(e.shape) + " of " + e.dtype +
                              " needs " + std::to_string(e.numel) + " x " +
                              std::to_string(*elem_bytes) + " bytes but data_offsets [" +
                              std::to_string(e.begin) + ", " + std::to_string(e.end) + "] hold " +
                              std::to_string(e.end - e.begin));
  }
  return e;
}

}  // namespace

Result<uint64_t> ParseSafetensorsHeaderLength(std::string_view first_bytes, uint64_t file_bytes,
                                              const std::string& path) {
  const std::string what = "safetensors file " + path;
  if (file_bytes < 8 || first_bytes.size() < 8) {
    return Status::Corruption(what + " has " + std::to_string(file_bytes) +
                              " bytes, fewer than the 8-byte header length; it is truncated or "
                              "not a safetensors file");
  }
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) {
    header_len |= uint64_t{static_cast<unsigned char>(first_bytes[i])} << (8 * i);
  }
  if (header_len > kMaxHeaderBytes || header_len > file_bytes - 8) {
    return Status::Corruption(what + ": header length " + std::to_string(header_len) +
                              " at offset 0 does not fit the file (" + std::to_string(file_bytes) +
                              " bytes); it is truncated or not a safetensors file");
  }
  return header_len;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view text, uint64_t data_bytes,
                                                 const std::string& path) {
  const std::string what = "safetensors file " + path;
  const json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return Status::Corruption(what + ": the " + std::to_string(text.size()) +
                              "-byte header at offset 8 is not a JSON object; the file is damaged "
                              "or not a safetensors file");
  }

  SafetensorsHeader out;
  std::vector<Entry>& entries = out.entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      if (!value.is_object()) {
        return Status::Corruption(what + ": \"__metadata__\" is not a JSON object");
      }
      for (const auto& [key, v] : value.items()) {
        if (!v.is_string()) {
          return Status::Corruption(what + ": metadata \"" + key +
                                    "\" is not a string (the format allows only strings)");
        }
        out.metadata[key] = v.get<std::string>();
      }
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Entry e, ParseEntry(path, name, value, data_bytes));
    entries.push_back(std::move(e));
  }

  // The tensors must tile the data section: sorted by begin, each starts where the last ended.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expect = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != expect) {
      return Status::Corruption(what + ", tensor '" + e->name + "': data_offsets start at " +
                                std::to_string(e->begin) + " but the previous tensor ends at " +
                                std::to_string(expect) +
                                (e->begin < expect ? " (overlap)" : " (gap)"));
    }
    expect = e->end;
  }
  if (expect != data_bytes) {
    return Status::Corruption(what + ": " + std::to_string(data_bytes - expect) +
                              " bytes after the last tensor (the tensors cover " +
                              std::to_string(expect) + " of " + std::to_string(data_bytes) +
                              " data bytes)");
  }
  return out;
}

}  // namespace strata
