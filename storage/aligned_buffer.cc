#include "storage/aligned_buffer.h"

#include <cstdlib>
#include <cstring>

#include "core/util/sizes.h"

namespace strata::storage {

void AlignedBuffer::Free::operator()(char* p) const { std::free(p); }

Result<AlignedBuffer> AlignedBuffer::Allocate(uint64_t bytes) {
  AlignedBuffer buffer;
  buffer.size_ = RoundUpToIoAlign(bytes == 0 ? 1 : bytes);
  void* p = nullptr;
  if (posix_memalign(&p, kIoAlignBytes, buffer.size_) != 0 || p == nullptr) {
    return Status::ResourceExhausted("cannot allocate a " + FormatBytes(buffer.size_) +
                                     " aligned I/O buffer; lower the page or block size");
  }
  std::memset(p, 0, buffer.size_);
  buffer.data_.reset(static_cast<char*>(p));
  return buffer;
}

}  // namespace strata::storage
