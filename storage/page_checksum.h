// The checksum of a page version: XXH3-64 of its bytes (catalog.h stores it, every read checks
// it). One function so that the writer and the reader cannot disagree on the hash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::storage {

uint64_t PageChecksum(const void* data, size_t bytes);

}  // namespace strata::storage
