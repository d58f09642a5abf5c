#include "core/util/sizes.h"

#include <cctype>
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
  std::string s(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return bad();
  std::string number = s.substr(0, i);
  if (number.find('.') != number.rfind('.')) return bad();
  std::string unit;
  for (size_t j = i; j < s.size(); ++j) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(s[j])));
  uint64_t multiplier = 0;
  if (unit.empty() || unit == "b") multiplier = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") multiplier = kKiB;
  else if (unit == "m" || unit == "mb" || unit == "mib") multiplier = kMiB;
  else if (unit == "g" || unit == "gb" || unit == "gib") multiplier = kGiB;
  else if (unit == "t" || unit == "tb" || unit == "tib") multiplier = kGiB * 1024;
  else return bad();
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return bad();
  long double bytes = static_cast<long double>(value) * multiplier;
  if (bytes > 1.8e19L) return bad();
  if (multiplier == 1 && number.find('.') != std::string::npos) return bad();
  return static_cast<uint64_t>(std::llround(static_cast<double>(bytes)));
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
