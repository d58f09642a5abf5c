#include "storage/aligned_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "core/util/sizes.h"

namespace strata::storage {
namespace {
constexpr uint64_t kHugePageBytes = 2 * 1024 * 1024;
}  // namespace

void AlignedBuffer::Free::operator()(char* p) const { std::free(p); }

Result<AlignedBuffer> AlignedBuffer::Allocate(uint64_t bytes, bool huge_pages) {
  AlignedBuffer buffer;
  buffer.size_ = RoundUpToIoAlign(bytes == 0 ? 1 : bytes);
  // Large buffers are 2 MiB aligned and asked to use transparent huge pages: a 1 MiB transfer
  // then spans one physically contiguous segment instead of 256 pages, which the block layer
  // would otherwise split (virtio-blk allows 254 segments per request).
  const bool huge = huge_pages && buffer.size_ >= kHugePageBytes;
  void* p = nullptr;
  if (posix_memalign(&p, huge ? kHugePageBytes : kIoAlignBytes, buffer.size_) != 0 ||
      p == nullptr) {
    return Status::ResourceExhausted("cannot allocate a " + FormatBytes(buffer.size_) +
                                     " aligned I/O buffer; lower the page or block size");
  }
  if (huge) ::madvise(p, buffer.size_ / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  std::memset(p, 0, buffer.size_);
  buffer.data_.reset(static_cast<char*>(p));
  return buffer;
}

}  // namespace strata::storage
