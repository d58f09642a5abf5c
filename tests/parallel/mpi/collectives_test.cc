// The MPI backend's collectives across the ranks of the job, checked bit for bit against the
// rank-order left fold computed here from every rank's known inputs (Note [Deterministic
// reductions] in docs/parallel.md).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "mpi_test_util.h"
#include "parallel/rank_fold.h"

namespace strata::parallel::testing_mpi {
namespace {

// The fold of every rank's inputs, in rank order, in T.
template <typename T>
std::vector<T> ExpectedSum(int ranks, size_t count) {
  const std::vector<T> all = AllContributions<T>(ranks, count);
  std::vector<T> sum(count);
  FoldInRankOrder(all.data(), count, ranks, sum.data());
  return sum;
}

// With 3 or more ranks and enough elements, the inputs must make the order visible, or the test
// proves nothing. (With 2 ranks there is one order: x0 + x1 == x1 + x0 exactly.)
template <typename T>
void ExpectOrderMatters(int ranks, size_t count) {
  if (ranks < 3 || count < 64) return;
  const std::vector<T> all = AllContributions<T>(ranks, count);
  const std::vector<T> left = ExpectedSum<T>(ranks, count);
  size_t differ = 0;
  for (size_t i = 0; i < count; ++i) {
    T reverse = all[(ranks - 1) * count + i];
    for (int r = ranks - 2; r >= 0; --r) reverse = reverse + all[r * count + i];
    differ += std::memcmp(&reverse, &left[i], sizeof(T)) != 0;
  }
  EXPECT_GT(differ, 0u) << "the inputs do not make summation order matter";
}

template <typename T>
void CheckAllReduce(size_t count, bool in_place) {
  Comm& comm = World();
  SCOPED_TRACE(::testing::Message() << "count " << count << (in_place ? " in place" : ""));
  std::vector<T> send(count), recv(count, T(-1));
  for (size_t i = 0; i < count; ++i) send[i] = Contribution<T>(comm.rank(), i);
  T* out = in_place ? send.data() : recv.data();
  ASSERT_TRUE(comm.all_reduce_sum(send.data(), out, count).wait().ok());
  const std::vector<T> expected = ExpectedSum<T>(comm.size(), count);
  EXPECT_EQ(std::memcmp(out, expected.data(), count * sizeof(T)), 0);
  ExpectOrderMatters<T>(comm.size(), count);
}

TEST(MpiCollectives, AllReduceFloatIsTheRankOrderFoldBitForBit) {
  const int n = World().size();
  for (size_t count : {size_t{1}, size_t(n), size_t(n) * 1000, size_t(n) * 1000 + 1,
                       size_t{1} << 20, (size_t{1} << 20) + 3}) {
    CheckAllReduce<float>(count, false);
    CheckAllReduce<float>(count, true);
  }
}

TEST(MpiCollectives, AllReduceDoubleIsTheRankOrderFoldBitForBit) {
  const int n = World().size();
  for (size_t count : {size_t{1}, size_t(n) * 999 + 2, (size_t{1} << 19) + 1}) {
    CheckAllReduce<double>(count, false);
    CheckAllReduce<double>(count, true);
  }
}

template <typename T>
void CheckReduceScatter(size_t recv_count) {
  Comm& comm = World();
  const size_t total = recv_count * comm.size();
  std::vector<T> send(total), recv(recv_count, T(-1));
  for (size_t i = 0; i < total; ++i) send[i] = Contribution<T>(comm.rank(), i);
  ASSERT_TRUE(comm.reduce_scatter_sum(send.data(), recv.data(), recv_count).wait().ok());
  const std::vector<T> expected = ExpectedSum<T>(comm.size(), total);
  EXPECT_EQ(
      std::memcmp(recv.data(), expected.data() + comm.rank() * recv_count, recv_count * sizeof(T)),
      0)
      << "recv_count " << recv_count;
}

TEST(MpiCollectives, ReduceScatterIsTheRankOrderFoldOfEachChunk) {
  for (size_t recv_count : {size_t{1}, size_t{7}, size_t{100003}}) {
    CheckReduceScatter<float>(recv_count);
    CheckReduceScatter<double>(recv_count);
  }
}

TEST(MpiCollectives, AllGatherPutsEachRankAtItsOffset) {
  Comm& comm = World();
  for (size_t bytes : {size_t{1}, size_t{13}, size_t{4} << 20}) {
    std::vector<unsigned char> send(bytes), recv(bytes * comm.size());
    for (size_t i = 0; i < bytes; ++i) send[i] = static_cast<unsigned char>(comm.rank() * 31 + i);
    ASSERT_TRUE(comm.all_gather(send.data(), recv.data(), bytes).wait().ok());
    for (int r = 0; r < comm.size(); ++r) {
      for (size_t i = 0; i < bytes; i += 997) {
        ASSERT_EQ(recv[r * bytes + i], static_cast<unsigned char>(r * 31 + i)) << r << " " << i;
      }
    }
    // In place: this rank's part already sits at its offset.
    std::vector<unsigned char> inplace(bytes * comm.size(), 0);
    std::memcpy(inplace.data() + comm.rank() * bytes, send.data(), bytes);
    ASSERT_TRUE(
        comm.all_gather(inplace.data() + comm.rank() * bytes, inplace.data(), bytes).wait().ok());
    EXPECT_EQ(inplace, recv);
  }
}

TEST(MpiCollectives, BroadcastFromTheLastRank) {
  Comm& comm = World();
  const int root = comm.size() - 1;  // not rank 0 (with 2 or more ranks)
  std::vector<int> buffer(100000, comm.rank() == root ? 0 : -1);
  if (comm.rank() == root) std::iota(buffer.begin(), buffer.end(), 17);
  ASSERT_TRUE(comm.broadcast(buffer.data(), buffer.size() * sizeof(int), root).wait().ok());
  for (size_t i = 0; i < buffer.size(); ++i) ASSERT_EQ(buffer[i], static_cast<int>(17 + i));
  const Status bad = comm.broadcast(buffer.data(), 4, comm.size()).wait();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.to_string();
}

TEST(MpiCollectives, BarrierAndZeroByteOps) {
  Comm& comm = World();
  EXPECT_TRUE(comm.barrier().ok());
  EXPECT_TRUE(comm.all_gather(nullptr, nullptr, 0).wait().ok());
  EXPECT_TRUE(comm.all_reduce_sum(static_cast<const float*>(nullptr), nullptr, 0).wait().ok());
  EXPECT_TRUE(comm.broadcast(nullptr, 0, 0).wait().ok());
  EXPECT_TRUE(comm.barrier().ok());
}

TEST(MpiCollectives, SizeAndRankMatchTheLauncher) {
  const LaunchInfo launch = DetectLaunch();  // rank 0 of 1 when run without mpirun
  EXPECT_EQ(World().rank(), launch.rank);
  EXPECT_EQ(World().size(), launch.size);
  EXPECT_EQ(World().backend(), CommBackend::kMpi);
  EXPECT_EQ(World().device(), -1);
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
