// Byte sizes: parsing what users type on the command line, and printing sizes back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace strata {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// Parses "4096", "512K", "512M", "2G", "1.5GiB", "16MiB", "1T" (case-insensitive, optional
// "B"/"iB" suffix; all units are binary: 1K = 1024). `flag` names the flag in the error:
// "--gpu-mem: '12X' is not a size; use bytes or a number with K, M, G or T (e.g. 512M, 1.5G)".
Result<uint64_t> ParseBytes(std::string_view text, std::string_view flag);

// "16 MiB", "1.50 GiB", "512 B": short human form for logs and errors.
std::string FormatBytes(uint64_t bytes);

}  // namespace strata
