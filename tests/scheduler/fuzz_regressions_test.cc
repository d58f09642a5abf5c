// The checkpoint-record fuzz target's seeds and regression inputs, in the default suite (see
// tests/fuzz/fuzz_regressions.h; the fuzzer itself runs under the `fuzz` label).
#include "tests/fuzz/fuzz_regressions.h"

#include <gtest/gtest.h>

#include "tests/fuzz/fuzz_targets.h"

namespace strata::fuzz {
namespace {

TEST(FuzzRegressions, CheckpointRecord) {
  EXPECT_GT(RunFuzzInputs("checkpoint_record", FuzzCheckpointRecord), 0u);
}

}  // namespace
}  // namespace strata::fuzz
