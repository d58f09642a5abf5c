// What the safetensors writer (safetensors.cc) and the header parser (safetensors_header.cc)
// share: the format's reserved key and the shape's wording in messages. Internal to core/io/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::safetensors_internal {

// The header key that holds the string-to-string metadata instead of a tensor.
inline constexpr const char* kMetadataKey = "__metadata__";

// "[d0, d1, ...]", for messages.
inline std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace strata::safetensors_internal
