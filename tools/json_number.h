// Numbers in JSON that read back to the same bits: 9 significant digits for float, 17 for
// double (the shortest counts that always round-trip), "null" for non-finite values.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace strata::tools {

inline std::string FloatToJson(float v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

inline std::string DoubleToJson(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace strata::tools
