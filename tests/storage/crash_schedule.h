// The workload of the crash-consistency test, shared by the child that runs it
// (crash_child.cc) and the parent that checks what survived (crash_consistency_test.cc).
// Batch k (k = 1, 2, ...) commits version k of the pages InBatch(k, p); the contents of
// (page, version) are FillPage(page, version). Every kManifestEvery batches the child replaces
// its one manifest by a new one, so recovery also has to count manifest references.
#pragma once

#include <cstdint>

#include "core/util/sizes.h"

namespace strata::storage::testing {

inline constexpr uint64_t kCrashPageBytes = 16 * kKiB;
inline constexpr uint64_t kCrashPages = 24;
// Current mappings + one manifest + one batch in flight, with room to spare.
inline constexpr uint64_t kCrashSlots = 3 * kCrashPages + 8;
inline constexpr uint64_t kManifestEvery = 8;

inline bool InBatch(uint64_t batch, uint64_t page) {
  uint64_t x = batch * 0x9E3779B97F4A7C15ull + page * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return page == batch % kCrashPages || x % 3 == 0;
}

// Version of `page` after batches 1..k committed (0: the page does not exist yet).
inline uint64_t ExpectedVersion(uint64_t k, uint64_t page) {
  for (uint64_t b = k; b > 0; --b) {
    if (InBatch(b, page)) return b;
  }
  return 0;
}

}  // namespace strata::storage::testing
