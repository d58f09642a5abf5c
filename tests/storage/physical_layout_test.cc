// PhysicalSegmentsPerMiB: a figure in [1, 256] for a touched buffer where frames are visible,
// NotSupported where they are hidden, InvalidArgument for a misaligned buffer.
#include "storage/physical_layout.h"

#include <gtest/gtest.h>

#include <cstring>

#include "storage/aligned_buffer.h"

namespace strata::storage {
namespace {

TEST(PhysicalLayout, TouchedBufferHasBetweenOneAndAPagePerSegment) {
  Result<AlignedBuffer> buffer = AlignedBuffer::Allocate(4 << 20, /*huge_pages=*/false);
  ASSERT_TRUE(buffer.ok());
  std::memset(buffer->data(), 1, buffer->size());  // Allocate faults in no page
  Result<double> segments = PhysicalSegmentsPerMiB(buffer->data(), buffer->size());
  if (!segments.ok()) {
    // Unprivileged runs cannot see frame numbers; that must be said, not guessed.
    EXPECT_EQ(segments.status().code(), StatusCode::kNotSupported) << segments.status().message();
    return;
  }
  EXPECT_GE(*segments, 1.0);
  EXPECT_LE(*segments, 256.0);
}

TEST(PhysicalLayout, MisalignedBufferIsRejected) {
  Result<AlignedBuffer> buffer = AlignedBuffer::Allocate(64 << 10);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(PhysicalSegmentsPerMiB(buffer->data() + 1, 4096).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PhysicalSegmentsPerMiB(buffer->data(), 100).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::storage
