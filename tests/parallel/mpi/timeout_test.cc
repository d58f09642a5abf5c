// A peer that never joins: the op fails within the comm's timeout, with a message naming the
// op, its bytes, the rank and the timeout, and the comm refuses further ops. Each case uses a
// dedicated 2 s comm; the job's World comm is untouched and lines the ranks up afterwards.
// (The abandoned requests stay pending in MPI until MPI_Finalize, which OpenMPI accepts.)
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "mpi_test_util.h"

namespace strata::parallel::testing_mpi {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTimeoutS = 2;
// How much later than the timeout a failure may come: polling sleeps are 50 us, but 4 ranks
// share 2 cores here.
constexpr double kSlackS = 8;

std::unique_ptr<Comm> ShortTimeoutComm() {
  auto comm = CreateComm({.backend = CommBackend::kMpi, .timeout_s = kTimeoutS});
  EXPECT_TRUE(comm.ok()) << comm.status().to_string();
  return comm.ok() ? std::move(comm).value() : nullptr;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(MpiTimeout, CollectiveWithAMissingRankFailsWithinTheTimeout) {
  std::unique_ptr<Comm> comm = ShortTimeoutComm();
  ASSERT_NE(comm, nullptr);
  if (comm->size() < 2) GTEST_SKIP() << "needs a second rank to leave out";
  // Buffers outlive the comm: MPI may still hold the abandoned request (mpi_comm.h).
  static std::vector<char> send(4096), recv;
  recv.resize(send.size() * comm->size());
  if (comm->rank() != 1) {  // rank 1 never joins
    const Clock::time_point start = Clock::now();
    const Status s = comm->all_gather(send.data(), recv.data(), send.size()).wait();
    const double took = SecondsSince(start);
    EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
    EXPECT_EQ(s.message(), "all_gather of 4096 bytes on rank " + std::to_string(comm->rank()) +
                               " of " + std::to_string(comm->size()) +
                               " did not finish within 2 s: a peer rank died or hangs, or did "
                               "not issue the same op");
    EXPECT_GE(took, kTimeoutS);
    EXPECT_LT(took, kTimeoutS + kSlackS);
    // Broken from now on: at once, naming the first failure.
    const Status next = comm->barrier();
    EXPECT_EQ(next.code(), StatusCode::kAborted) << next.to_string();
    EXPECT_NE(next.message().find("was not run"), std::string::npos) << next.message();
    EXPECT_NE(next.message().find("all_gather of 4096 bytes"), std::string::npos);
  }
  ASSERT_TRUE(World().barrier().ok());
}

TEST(MpiTimeout, ReceiveFromASilentPeerFailsWithinTheTimeout) {
  std::unique_ptr<Comm> comm = ShortTimeoutComm();
  ASSERT_NE(comm, nullptr);
  if (comm->size() < 2) GTEST_SKIP() << "needs a peer";
  static double value = 0;
  if (comm->rank() == 0) {
    const Clock::time_point start = Clock::now();
    const Status s = comm->recv(&value, sizeof(value), 1, 5).wait();
    EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
    EXPECT_NE(s.message().find("recv of 8 bytes to/from rank 1 with tag 5 on rank 0 of"),
              std::string::npos)
        << s.message();
    EXPECT_LT(SecondsSince(start), kTimeoutS + kSlackS);
  }
  ASSERT_TRUE(World().barrier().ok());
}

// An op queued behind the one that times out is not run: it fails as soon as the first does.
TEST(MpiTimeout, OpsQueuedBehindAFailureFailAtOnce) {
  std::unique_ptr<Comm> comm = ShortTimeoutComm();
  ASSERT_NE(comm, nullptr);
  if (comm->size() < 2) GTEST_SKIP() << "needs a second rank to leave out";
  static float x[4] = {};
  if (comm->rank() != 1) {
    CommWork first = comm->all_reduce_sum(x, x, 4);
    CommWork second = comm->all_reduce_sum(x, x, 4);
    const Clock::time_point start = Clock::now();
    EXPECT_EQ(second.wait().code(), StatusCode::kAborted);
    EXPECT_LT(SecondsSince(start), kTimeoutS + kSlackS);
    EXPECT_TRUE(first.done());
    EXPECT_EQ(first.wait().code(), StatusCode::kTimeout);
  }
  ASSERT_TRUE(World().barrier().ok());
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
