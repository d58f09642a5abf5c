#include "storage/page_checksum.h"

// Note [Inlined XXH3]
// xxhash.h compiled into this file rather than called in Debian's libxxhash.so: on this machine
// the shared library hashes a 1 MiB page at ~20 GB/s and the inlined code at ~40 GB/s, and every
// NVMe write and read of a page is hashed once, on the same cores that run the (sim) device's
// kernels. The value is the same XXH3-64 either way, so stores written before stay readable.
//
// Under -march=native on an AVX-512 machine xxhash would pick its AVX-512 path, in which GCC 12
// reports -Wmaybe-uninitialized false positives inside its own intrinsics headers (errors under
// STRATA_WERROR); the AVX2 path hashes as fast here (both are memory-bound), so it is used.
#define XXH_INLINE_ALL
#if defined(__AVX512F__) && defined(__AVX2__)
#define XXH_VECTOR XXH_AVX2
#endif
#include <xxhash.h>

namespace strata::storage {

uint64_t PageChecksum(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

}  // namespace strata::storage
