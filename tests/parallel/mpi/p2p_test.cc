// Point-to-point on the MPI backend: a ring of separate sends and receives, a ring of
// send_recv, and the checks on peers, tags and sizes.
#include <gtest/gtest.h>

#include <vector>

#include "mpi_test_util.h"

namespace strata::parallel::testing_mpi {
namespace {

std::vector<int> Message(int from, size_t ints) {
  std::vector<int> message(ints);
  for (size_t i = 0; i < ints; ++i) message[i] = from * 1000003 + static_cast<int>(i);
  return message;
}

// Separate send and recv each run alone (comm.h): even ranks send first and odd ranks receive
// first, so no two neighbours both wait in a send. Needs an even number of ranks. 1 MiB is
// above OpenMPI's eager limit, so this is the rendezvous path.
TEST(MpiPointToPoint, RingOfSendsAndReceives) {
  Comm& comm = World();
  if (comm.size() % 2 != 0) GTEST_SKIP() << "the send/recv parity ring needs an even size";
  const int right = (comm.rank() + 1) % comm.size();
  const int left = (comm.rank() + comm.size() - 1) % comm.size();
  const size_t ints = 1 << 18;
  const std::vector<int> out = Message(comm.rank(), ints);
  std::vector<int> in(ints, -1);
  CommWork first, second;
  if (comm.rank() % 2 == 0) {
    first = comm.send(out.data(), ints * sizeof(int), right, 3);
    second = comm.recv(in.data(), ints * sizeof(int), left, 3);
  } else {
    first = comm.recv(in.data(), ints * sizeof(int), left, 3);
    second = comm.send(out.data(), ints * sizeof(int), right, 3);
  }
  ASSERT_TRUE(first.wait().ok());
  ASSERT_TRUE(second.wait().ok());
  EXPECT_EQ(in, Message(left, ints));
}

TEST(MpiPointToPoint, RingOfSendRecv) {
  Comm& comm = World();
  const int right = (comm.rank() + 1) % comm.size();
  const int left = (comm.rank() + comm.size() - 1) % comm.size();
  if (right == comm.rank()) GTEST_SKIP() << "one rank has no peer";
  for (size_t ints : {size_t{1}, size_t{1} << 20}) {
    const std::vector<int> out = Message(comm.rank(), ints);
    std::vector<int> in(ints, -1);
    ASSERT_TRUE(comm.send_recv(out.data(), ints * sizeof(int), right, in.data(), ints * sizeof(int),
                               left, Comm::kMaxTag)
                    .wait()
                    .ok());
    EXPECT_EQ(in, Message(left, ints));
  }
}

TEST(MpiPointToPoint, TagsKeepMessagesApart) {
  Comm& comm = World();
  if (comm.size() < 2 || comm.rank() > 1) return;  // ranks 0 and 1 only
  const int peer = 1 - comm.rank();
  int a = 0, b = 0;
  if (comm.rank() == 0) {
    int one = 1, two = 2;
    ASSERT_TRUE(comm.send(&one, sizeof(int), peer, 1).wait().ok());
    ASSERT_TRUE(comm.send(&two, sizeof(int), peer, 2).wait().ok());
  } else {
    // Received in the other order than sent: small messages go eagerly, so the sends finish.
    ASSERT_TRUE(comm.recv(&b, sizeof(int), peer, 2).wait().ok());
    ASSERT_TRUE(comm.recv(&a, sizeof(int), peer, 1).wait().ok());
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 2);
  }
}

TEST(MpiPointToPoint, BadPeersAndTagsAreInvalidArguments) {
  Comm& comm = World();
  int x = 0;
  EXPECT_EQ(comm.send(&x, sizeof(x), comm.rank(), 0).wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.recv(&x, sizeof(x), comm.size(), 0).wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.recv(&x, sizeof(x), -1, 0).wait().code(), StatusCode::kInvalidArgument);
  const int other = (comm.rank() + 1) % comm.size();
  if (other != comm.rank()) {
    const Status tag = comm.send(&x, sizeof(x), other, Comm::kMaxTag + 1).wait();
    EXPECT_EQ(tag.code(), StatusCode::kInvalidArgument) << tag.to_string();
  }
  EXPECT_TRUE(comm.barrier().ok());  // the comm is still usable
}

// A message shorter than the receiver expects fails the receive and breaks that comm (a
// dedicated one here).
TEST(MpiPointToPoint, ShortMessageFailsTheReceive) {
  auto dedicated = CreateComm({.backend = CommBackend::kMpi, .timeout_s = 30});
  ASSERT_TRUE(dedicated.ok()) << dedicated.status().to_string();
  Comm& comm = **dedicated;
  if (comm.size() >= 2 && comm.rank() <= 1) {
    int data[2] = {5, 6};
    if (comm.rank() == 0) {
      ASSERT_TRUE(comm.send(data, sizeof(int), 1, 0).wait().ok());
    } else {
      const Status s = comm.recv(data, sizeof(data), 0, 0).wait();
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
      EXPECT_NE(s.message().find("received 4 bytes, expected 8"), std::string::npos) << s.message();
      EXPECT_EQ(comm.barrier().code(), StatusCode::kAborted);
    }
  }
  ASSERT_TRUE(World().barrier().ok());
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
