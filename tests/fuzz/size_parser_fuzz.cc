// Fuzz target size_parser (see fuzz_targets.h).
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>

#include "core/util/check.h"
#include "core/util/sizes.h"
#include "tests/fuzz/fuzz_targets.h"

namespace strata::fuzz {
namespace {

constexpr uint64_t kTiB = kGiB * 1024;

// The multiplier of a unit as ParseBytes documents it, 0 for anything else.
uint64_t UnitBytes(std::string unit) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() || unit == "b") return 1;
  if (unit == "k" || unit == "kb" || unit == "kib") return kKiB;
  if (unit == "m" || unit == "mb" || unit == "mib") return kMiB;
  if (unit == "g" || unit == "gb" || unit == "gib") return kGiB;
  if (unit == "t" || unit == "tb" || unit == "tib") return kTiB;
  return 0;
}

// An independent oracle for "<digits><unit>": the value in 128-bit arithmetic, or nothing
// when the input has another shape. `fits` is false when it is over 2^64 - 1.
bool WholeNumber(std::string_view text, uint64_t* value, bool* fits) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || (i < text.size() && text[i] == '.')) return false;
  const uint64_t unit = UnitBytes(std::string(text.substr(i)));
  if (unit == 0) return false;
  unsigned __int128 v = 0;
  *fits = true;
  for (size_t k = 0; k < i; ++k) {
    v = v * 10 + static_cast<unsigned>(text[k] - '0');
    if (v > UINT64_MAX) *fits = false;
    if (!*fits) break;
  }
  v *= unit;
  if (v > UINT64_MAX) *fits = false;
  *value = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

bool FuzzSizeParser(std::string_view bytes) {
  Result<uint64_t> parsed = ParseBytes(bytes, "--fuzz");
  uint64_t want = 0;
  bool fits = false;
  if (WholeNumber(bytes, &want, &fits)) {
    STRATA_CHECK(parsed.ok() == fits) << "'" << bytes << "': " << parsed.status().to_string();
    if (fits) {
      STRATA_CHECK_EQ(*parsed, want) << "'" << bytes << "'";
    }
  }
  if (!parsed.ok()) {
    STRATA_CHECK(parsed.status().message().find("--fuzz") != std::string::npos)
        << "the error does not name the flag: " << parsed.status().message();
    return false;
  }
  const uint64_t v = *parsed;
  Result<uint64_t> again = ParseBytes(std::to_string(v), "--fuzz");
  STRATA_CHECK(again.ok() && *again == v) << "'" << bytes << "' = " << v
                                          << " does not parse back from its decimal form";
  const std::pair<uint64_t, const char*> kUnits[] = {
      {kKiB, "K"}, {kMiB, "MiB"}, {kGiB, "g"}, {kTiB, "TB"}};
  for (const auto& [unit, suffix] : kUnits) {
    if (v % unit != 0) continue;
    Result<uint64_t> in_unit = ParseBytes(std::to_string(v / unit) + suffix, "--fuzz");
    STRATA_CHECK(in_unit.ok() && *in_unit == v) << v << " does not parse back as "
                                                << v / unit << suffix;
  }
  FormatBytes(v);  // must not crash
  return true;
}

}  // namespace strata::fuzz
