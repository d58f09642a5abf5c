// Helpers shared by the storage tests: a scratch directory on a real disk (O_DIRECT alignment
// is not enforced on tmpfs), aligned buffers with contents that are a pure function of
// (page, version), and a store opener.
#pragma once

#include "tests/common/scratch_dir.h"

#include <gtest/gtest.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "storage/aligned_buffer.h"
#include "storage/page_store.h"

namespace strata::storage::testing {

using ::strata::test_support::ScratchDir;

// Deterministic contents of (page, version): what a crash-test child writes and the parent
// expects to read back.
inline void FillPage(char* data, uint64_t bytes, uint64_t page, uint64_t version) {
  uint64_t x = (page + 1) * 0x9E3779B97F4A7C15ull ^ (version + 1) * 0xC2B2AE3D27D4EB4Full;
  for (uint64_t i = 0; i < bytes; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(data + i, &x, std::min<uint64_t>(8, bytes - i));
  }
}

inline bool PageMatches(const char* data, uint64_t bytes, uint64_t page, uint64_t version) {
  static thread_local std::string expected;
  expected.resize(bytes);
  FillPage(expected.data(), bytes, page, version);
  return std::memcmp(expected.data(), data, bytes) == 0;
}

inline AlignedBuffer MustAllocate(uint64_t bytes) {
  Result<AlignedBuffer> b = AlignedBuffer::Allocate(bytes);
  STRATA_CHECK(b.ok()) << b.status().to_string();
  return std::move(b).value();
}

}  // namespace strata::storage::testing
