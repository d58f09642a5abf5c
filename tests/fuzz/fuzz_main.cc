// libFuzzer's entry point for one target: STRATA_FUZZ_ENTRY names the function of
// fuzz_targets.h that this executable fuzzes (tests/fuzz/CMakeLists.txt sets it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)strata::fuzz::STRATA_FUZZ_ENTRY(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
