// AlignedBuffer: aligned, zero, and untouched until its first toucher, so that an io_uring
// registration (a long-term pin) is what faults its pages in (Note [4 KiB-page reads on
// virtio-blk] in storage/physical_layout.cc).
#include "storage/aligned_buffer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "storage/io_engine.h"
#include "storage/posix_file.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using testing::ScratchDir;

// Pages of [p, p + bytes) that have a page-table entry (mincore on an anonymous mapping).
uint64_t ResidentPages(const char* p, uint64_t bytes) {
  std::vector<unsigned char> vec(bytes / kIoAlignBytes);
  EXPECT_EQ(::mincore(const_cast<char*>(p), bytes, vec.data()), 0) << std::strerror(errno);
  uint64_t resident = 0;
  for (unsigned char v : vec) resident += v & 1;
  return resident;
}

TEST(AlignedBuffer, AllocateFaultsInNoPage) {
  // A memset (the old way) would fault every page in here, from the scattered movable lists.
  for (bool huge : {false, true}) {
    Result<AlignedBuffer> buffer = AlignedBuffer::Allocate(16 * kMiB, huge);
    ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
    EXPECT_EQ(ResidentPages(buffer->data(), buffer->size()), 0u) << "huge_pages=" << huge;
  }
}

TEST(AlignedBuffer, IsAlignedSizedAndZero) {
  struct Case {
    uint64_t bytes;
    bool huge;
    uint64_t size;
    uint64_t align;
  };
  for (const Case& c : {Case{0, true, 4 * kKiB, 4 * kKiB}, Case{5000, true, 8 * kKiB, 4 * kKiB},
                        Case{3 * kMiB + 1, true, 3 * kMiB + 4 * kKiB, 2 * kMiB},
                        Case{3 * kMiB + 1, false, 3 * kMiB + 4 * kKiB, 4 * kKiB}}) {
    Result<AlignedBuffer> buffer = AlignedBuffer::Allocate(c.bytes, c.huge);
    ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
    EXPECT_EQ(buffer->size(), c.size) << c.bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % c.align, 0u) << c.bytes;
    const std::vector<char> zeros(buffer->size(), 0);
    EXPECT_EQ(std::memcmp(buffer->data(), zeros.data(), zeros.size()), 0) << c.bytes;
    // Writable to its last byte.
    buffer->data()[buffer->size() - 1] = 7;
    EXPECT_EQ(buffer->data()[buffer->size() - 1], 7);
  }
}

TEST(AlignedBuffer, MovedBufferKeepsItsMemoryAndTheSourceIsEmpty) {
  Result<AlignedBuffer> a = AlignedBuffer::Allocate(64 * kKiB);
  ASSERT_TRUE(a.ok());
  a->data()[100] = 42;
  AlignedBuffer b = std::move(a).value();
  EXPECT_EQ(b.data()[100], 42);
  b = AlignedBuffer();
  EXPECT_EQ(b.data(), nullptr);
}

TEST(AlignedBuffer, AbsurdSizeIsResourceExhausted) {
  EXPECT_EQ(AlignedBuffer::Allocate(UINT64_MAX).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(AlignedBuffer::Allocate(uint64_t{1} << 62, false).status().code(),
            StatusCode::kResourceExhausted);
}

// What the header promises callers: register first, and the pin is the first toucher.
TEST(AlignedBuffer, IoUringRegistrationFaultsThePagesIn) {
  IoEngineOptions options;
  options.backend = IoBackend::kUring;
  Result<std::unique_ptr<IoEngine>> engine = IoEngine::Create(options);
  if (!engine.ok()) GTEST_SKIP() << "no io_uring here: " << engine.status().message();
  Result<AlignedBuffer> buffer = AlignedBuffer::Allocate(4 * kMiB, /*huge_pages=*/false);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE((*engine)->register_buffer(buffer->data(), buffer->size()).ok());
  const uint64_t resident = ResidentPages(buffer->data(), buffer->size());

  // Fixed buffers may be refused by the kernel (register_buffer is then a no-op): find out with
  // one read, which counts as a fixed-buffer request only if the buffer is in the table.
  ScratchDir dir;
  const std::string path = dir.path() + "/data";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644));
  ASSERT_TRUE(fd.valid());
  ASSERT_EQ(::posix_fallocate(fd.get(), 0, 4 * kKiB), 0);
  Result<int> file = (*engine)->register_file(fd.get(), path);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*engine)->read(*file, 0, buffer->data(), 4 * kKiB).get().ok());
  if ((*engine)->stats().fixed_buffer_requests == 0) {
    GTEST_SKIP() << "this kernel refused io_uring fixed buffers; nothing pins the buffer";
  }
  EXPECT_EQ(resident, buffer->size() / kIoAlignBytes);
  (*engine)->unregister_file(*file);
  (*engine)->unregister_buffer(buffer->data());
}

}  // namespace
}  // namespace strata::storage
