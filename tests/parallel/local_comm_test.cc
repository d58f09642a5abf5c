// The local backend: rank 0 of 1, ops are copies that are complete when they return.
#include "parallel/local_comm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace strata::parallel {
namespace {

std::unique_ptr<Comm> MakeLocal() {
  auto comm = CreateComm({.backend = CommBackend::kLocal});
  EXPECT_TRUE(comm.ok()) << comm.status().to_string();
  return std::move(comm).value();
}

TEST(LocalComm, IsRankZeroOfOne) {
  auto comm = MakeLocal();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->backend(), CommBackend::kLocal);
  EXPECT_EQ(comm->device(), -1);
  EXPECT_TRUE(comm->barrier().ok());
}

TEST(LocalComm, ReductionsAreCopiesInPlaceOrNot) {
  auto comm = MakeLocal();
  const std::vector<float> in = {1e8f, 1.0f, -1e8f, 0.5f, -0.0f};
  std::vector<float> out(in.size(), 7.0f);
  CommWork work = comm->all_reduce_sum(in.data(), out.data(), in.size());
  EXPECT_TRUE(work.done());
  ASSERT_TRUE(work.wait().ok());
  EXPECT_EQ(std::memcmp(out.data(), in.data(), in.size() * sizeof(float)), 0);

  std::vector<double> inout = {0.1, 0.2, 0.3};
  const std::vector<double> before = inout;
  ASSERT_TRUE(comm->all_reduce_sum(inout.data(), inout.data(), inout.size()).wait().ok());
  EXPECT_EQ(inout, before);

  std::vector<float> chunk(in.size());
  ASSERT_TRUE(comm->reduce_scatter_sum(in.data(), chunk.data(), in.size()).wait().ok());
  EXPECT_EQ(std::memcmp(chunk.data(), in.data(), in.size() * sizeof(float)), 0);
  std::vector<double> dchunk(before.size());
  ASSERT_TRUE(comm->reduce_scatter_sum(before.data(), dchunk.data(), before.size()).wait().ok());
  EXPECT_EQ(dchunk, before);
}

TEST(LocalComm, GatherAndBroadcastMoveBytes) {
  auto comm = MakeLocal();
  const char text[] = "strata";
  char gathered[sizeof(text)] = {};
  ASSERT_TRUE(comm->all_gather(text, gathered, sizeof(text)).wait().ok());
  EXPECT_STREQ(gathered, text);
  ASSERT_TRUE(comm->all_gather(gathered, gathered, sizeof(text)).wait().ok());  // in place
  EXPECT_STREQ(gathered, text);
  ASSERT_TRUE(comm->broadcast(gathered, sizeof(gathered), 0).wait().ok());
  EXPECT_STREQ(gathered, text);
  ASSERT_TRUE(comm->all_reduce_sum(static_cast<const float*>(nullptr), nullptr, 0).wait().ok());
}

TEST(LocalComm, BadRootAndPeersAreInvalidArguments) {
  auto comm = MakeLocal();
  char byte = 0;
  const Status root = comm->broadcast(&byte, 1, 1).wait();
  EXPECT_EQ(root.code(), StatusCode::kInvalidArgument) << root.to_string();
  EXPECT_NE(root.message().find("root 1"), std::string::npos) << root.message();
  EXPECT_EQ(comm->send(&byte, 1, 0, 0).wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->recv(&byte, 1, 0, 0).wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->send_recv(&byte, 1, 0, &byte, 1, 0, 0).wait().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(comm->barrier().ok());  // a bad argument does not break the comm
}

TEST(LocalCommDeathTest, AbortEndsTheProcessWithTheCode) {
  EXPECT_EXIT(MakeLocal()->abort(3), testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace strata::parallel

namespace strata::parallel {
namespace {

TEST(LocalComm, SplitIsAnotherRankZeroOfOne) {
  std::unique_ptr<Comm> comm = CreateLocalComm();
  auto sub = comm->split(3, 7);
  ASSERT_TRUE(sub.ok()) << sub.status().to_string();
  EXPECT_EQ((*sub)->rank(), 0);
  EXPECT_EQ((*sub)->size(), 1);
  EXPECT_EQ(comm->split(-1, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::parallel
