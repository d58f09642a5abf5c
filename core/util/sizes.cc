#include "core/util/sizes.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace strata {

Result<uint64_t> ParseBytes(std::string_view text, std::string_view flag) {
  auto bad = [&] {
    return Status::InvalidArgument(std::string(flag) + ": '" + std::string(text) +
                                   "' is not a size; use bytes or a number with K, M, G or T "
                                   "(e.g. 512M, 1.5G, 16MiB)");
  };
  auto too_large = [&] {
    return Status::InvalidArgument(std::string(flag) + ": '" + std::string(text) +
                                   "' is more than 2^64 - 1 bytes (16 EiB); give a smaller size");
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  const std::string_view number = text.substr(0, i);
  const size_t dot = number.find('.');
  if (number.empty() || number == "." || dot != number.rfind('.')) return bad();
  std::string unit;
  for (char c : text.substr(i)) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  uint64_t multiplier = 0;
  if (unit.empty() || unit == "b") multiplier = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") multiplier = kKiB;
  else if (unit == "m" || unit == "mb" || unit == "mib") multiplier = kMiB;
  else if (unit == "g" || unit == "gb" || unit == "gib") multiplier = kGiB;
  else if (unit == "t" || unit == "tb" || unit == "tib") multiplier = kGiB * 1024;
  else return bad();
  if (dot == std::string_view::npos) {
    // Whole numbers in integer arithmetic: exact up to 2^64 - 1 (a double is exact only to 2^53).
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec == std::errc::result_out_of_range) return too_large();
    if (ec != std::errc() || end != number.data() + number.size()) return bad();
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(value, multiplier, &bytes)) return too_large();
    return bytes;
  }
  if (multiplier == 1) return bad();  // a fraction of a byte
  // A fraction of a unit, rounded to the nearest byte. long double holds every uint64 exactly.
  const long double value = std::strtold(std::string(number).c_str(), nullptr);
  const long double bytes = std::round(value * multiplier);
  if (!std::isfinite(bytes)) return too_large();
  if (bytes >= 18446744073709551616.0L) return too_large();  // 2^64
  return static_cast<uint64_t>(bytes);
}

std::string FormatBytes(uint64_t bytes) {
  char buf[64];
  if (bytes < kKiB) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < kMiB) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", bytes / double(kKiB));
  } else if (bytes < kGiB) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / double(kMiB));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(kGiB));
  }
  return buf;
}

}  // namespace strata
