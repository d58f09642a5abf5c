// AlignedBuffer: an owned, zero-initialised host buffer whose address and size are multiples of
// 4 KiB, as O_DIRECT and io_uring fixed buffers require.
//
// Contract:
// - Owns its memory (a private anonymous mapping of its own); move-only. Not thread-safe by
//   itself (the bytes are the caller's to share).
// - size() is rounded up to a multiple of kIoAlignBytes; data() is kIoAlignBytes-aligned.
// - The bytes read as zero, but Allocate touches none of them: each page is faulted in by its
//   first write, or by the first long-term pin (IoEngine::register_buffer, a device's
//   register_host). Register a buffer before writing to it: pages faulted by the pin come from
//   the kernel's unmovable free lists, which on 4 KiB pages give physically contiguous runs,
//   where pages faulted by stores come scattered (Note [4 KiB-page reads on virtio-blk] in
//   storage/physical_layout.cc). A buffer is then resident only once touched or pinned.
// - Allocation failure is a Status (ResourceExhausted), never an abort: callers size buffers
//   from user input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/util/status.h"

namespace strata::storage {

// Alignment of every offset, length and buffer address handed to the I/O layer.
inline constexpr uint64_t kIoAlignBytes = 4096;

inline constexpr uint64_t RoundUpToIoAlign(uint64_t bytes) {
  return (bytes + kIoAlignBytes - 1) / kIoAlignBytes * kIoAlignBytes;
}
inline constexpr bool IsIoAligned(uint64_t value) { return value % kIoAlignBytes == 0; }
inline bool IsIoAligned(const void* ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % kIoAlignBytes == 0;
}

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Buffers of 2 MiB and more are 2 MiB aligned and advised to use transparent huge pages
  // (MADV_HUGEPAGE) unless `huge_pages` is false: a large transfer then spans few physically
  // contiguous segments, which the block layer need not split.
  static Result<AlignedBuffer> Allocate(uint64_t bytes, bool huge_pages = true);

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  uint64_t size() const { return size_; }

 private:
  struct Unmap {
    uint64_t bytes;  // the mapping's length, for munmap
    void operator()(char* p) const;
  };
  std::unique_ptr<char, Unmap> data_;
  uint64_t size_ = 0;
};

}  // namespace strata::storage
