// PhysicalSegmentsPerMiB: how many physically contiguous runs the pages of a host buffer form,
// per 1 MiB of buffer, read from /proc/self/pagemap. It is what a 1 MiB O_DIRECT transfer from
// or into that buffer costs the block device in scatter-gather segments (Note [4 KiB-page
// reads on virtio-blk] in physical_layout.cc): 1 on a huge page, up to 256 on 4 KiB pages.
//
// Contract: a diagnostic, for benchmarks and logs. The buffer's pages must be present (touched
// or pinned); a non-present page counts as its own segment. Linux hides page frame numbers
// from processes without CAP_SYS_ADMIN, and then this is NotSupported (never a wrong figure).
// Thread-safe; reads only.
#pragma once

#include <cstdint>

#include "core/util/status.h"

namespace strata::storage {

Result<double> PhysicalSegmentsPerMiB(const void* buffer, uint64_t bytes);

}  // namespace strata::storage
