#include "storage/aligned_buffer.h"

#include <sys/mman.h>

#include <cstdint>

#include "core/util/sizes.h"

namespace strata::storage {
namespace {
constexpr uint64_t kHugePageBytes = 2 * 1024 * 1024;

Status CannotAllocate(uint64_t bytes) {
  return Status::ResourceExhausted("cannot allocate a " + FormatBytes(bytes) +
                                   " aligned I/O buffer; lower the page or block size");
}
}  // namespace

void AlignedBuffer::Unmap::operator()(char* p) const { ::munmap(p, bytes); }

Result<AlignedBuffer> AlignedBuffer::Allocate(uint64_t bytes, bool huge_pages) {
  if (bytes > UINT64_MAX - 2 * kHugePageBytes) return CannotAllocate(bytes);
  const uint64_t size = RoundUpToIoAlign(bytes == 0 ? 1 : bytes);
  // Large buffers are 2 MiB aligned and asked to use transparent huge pages: a 1 MiB transfer
  // then spans one physically contiguous segment instead of 256 pages, which the block layer
  // would otherwise split (virtio-blk allows 254 segments per request).
  const bool huge = huge_pages && size >= kHugePageBytes;
  const uint64_t slack = huge ? kHugePageBytes : 0;
  // A mapping of our own rather than posix_memalign: its pages are the kernel's zero pages until
  // first touched, so no memset is needed to zero them, and the first toucher decides where the
  // frames come from. Whoever pins the buffer first (register_buffer) faults it in from the
  // unmovable free lists, the way fio's untouched malloc buffer is faulted; a memset here would
  // take the scattered movable pages instead (Note [4 KiB-page reads on virtio-blk]).
  void* raw = ::mmap(nullptr, size + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
  if (raw == MAP_FAILED) return CannotAllocate(size);
  char* const start = static_cast<char*>(raw);
  char* p = start;
  if (huge) {
    // Trim the mapping to a 2 MiB-aligned window, so that every 2 MiB of it can be one huge page.
    p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(start) + kHugePageBytes - 1) /
                                kHugePageBytes * kHugePageBytes);
    if (p > start) ::munmap(start, static_cast<size_t>(p - start));
    char* const end = start + size + slack;
    if (p + size < end) ::munmap(p + size, static_cast<size_t>(end - (p + size)));
    ::madvise(p, size / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  }
  AlignedBuffer buffer;
  buffer.size_ = size;
  buffer.data_ = std::unique_ptr<char, Unmap>(p, Unmap{size});
  return buffer;
}

}  // namespace strata::storage
