// MpiByteType: byte counts above INT_MAX become one derived datatype of exactly that many bytes
// and that extent. The limits are lowered so that the derived path runs with small buffers.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "mpi_test_util.h"
#include "parallel/mpi_byte_type.h"

namespace strata::parallel::testing_mpi {
namespace {

constexpr uint64_t kMaxCount = 1000;
constexpr uint64_t kBlockBytes = 64;

TEST(MpiByteType, SmallCountsAreBytes) {
  auto type = MpiByteType::Create(12345);
  ASSERT_TRUE(type.ok()) << type.status().to_string();
  EXPECT_EQ(type->count(), 12345);
  EXPECT_EQ(type->type(), MPI_BYTE);
}

TEST(MpiByteType, LargeCountsAreOneTypeOfThatSizeAndExtent) {
  for (uint64_t bytes : {uint64_t{1001}, uint64_t{64} * 100, uint64_t{10007}}) {
    auto type = MpiByteType::Create(bytes, kMaxCount, kBlockBytes);
    ASSERT_TRUE(type.ok()) << type.status().to_string();
    EXPECT_EQ(type->count(), 1);
    MPI_Count size = 0, lb = -1, extent = 0;
    ASSERT_EQ(MPI_Type_size_x(type->type(), &size), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_get_extent_x(type->type(), &lb, &extent), MPI_SUCCESS);
    EXPECT_EQ(size, static_cast<MPI_Count>(bytes));
    EXPECT_EQ(lb, 0);
    EXPECT_EQ(extent, static_cast<MPI_Count>(bytes));
  }
}

// An all-to-all with the derived type on one side and plain bytes on the other: element r of
// the send buffer must land at r * bytes, and the two forms must match as type signatures.
// (MPI is called directly on this thread; the MPI here provides MPI_THREAD_MULTIPLE.)
TEST(MpiByteType, DerivedTypeMovesTheRightBytesInAnAllToAll) {
  const int size = World().size();
  const int rank = World().rank();
  const uint64_t bytes = 10007;
  auto big = MpiByteType::Create(bytes, kMaxCount, kBlockBytes);
  ASSERT_TRUE(big.ok()) << big.status().to_string();
  std::vector<unsigned char> send(bytes * size), recv(bytes * size, 0);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<unsigned char>(rank * 7 + i);
  ASSERT_EQ(MPI_Alltoall(send.data(), big->count(), big->type(), recv.data(),
                         static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD),
            MPI_SUCCESS);
  for (int r = 0; r < size; ++r) {
    for (uint64_t i = 0; i < bytes; ++i) {
      const size_t at = r * bytes + i;
      // Rank r sent its chunk `rank`, i.e. its bytes from rank * bytes.
      ASSERT_EQ(recv[at], static_cast<unsigned char>(r * 7 + rank * bytes + i)) << r << " " << i;
    }
  }
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
