// What the safetensors writer and in-memory reader (safetensors.cc), the header parser
// (safetensors_header.cc) and the file reader (safetensors_reader.cc) share: the format's
// reserved key, the shape's wording in messages, and the widening of F16/BF16. Internal to
// core/io/.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace strata {
float HalfToFloat(uint16_t bits);      // declared in safetensors.h
float Bfloat16ToFloat(uint16_t bits);  // declared in safetensors.h
}  // namespace strata

namespace strata::safetensors_internal {

// The header key that holds the string-to-string metadata instead of a tensor.
inline constexpr const char* kMetadataKey = "__metadata__";

// "[d0, d1, ...]", a shape as a safetensors header writes it, for messages.
inline std::string HeaderShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Converts `numel` F16 or BF16 values at `src` (little-endian, any alignment) to floats.
inline void HalvesToFloats(const char* src, uint64_t numel, bool bf16, float* dst) {
  for (uint64_t i = 0; i < numel; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, sizeof h);
    dst[i] = bf16 ? strata::Bfloat16ToFloat(h) : strata::HalfToFloat(h);
  }
}

}  // namespace strata::safetensors_internal
