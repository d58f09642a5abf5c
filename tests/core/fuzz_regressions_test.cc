// The core fuzz targets' seeds and regression inputs, in the default suite (see
// tests/fuzz/fuzz_regressions.h; the fuzzers themselves run under the `fuzz` label).
#include "tests/fuzz/fuzz_regressions.h"

#include <gtest/gtest.h>

#include "tests/fuzz/fuzz_targets.h"

namespace strata::fuzz {
namespace {

TEST(FuzzRegressions, SafetensorsHeader) {
  EXPECT_GT(RunFuzzInputs("safetensors_header", FuzzSafetensorsHeader), 0u);
}

TEST(FuzzRegressions, TokenHeader) {
  EXPECT_GT(RunFuzzInputs("token_header", FuzzTokenHeader), 0u);
}

TEST(FuzzRegressions, SizeParser) {
  EXPECT_GT(RunFuzzInputs("size_parser", FuzzSizeParser), 0u);
}

}  // namespace
}  // namespace strata::fuzz
