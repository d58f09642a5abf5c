// The words of Comm op errors: which op, how many bytes, which rank, the timeout.
#include "parallel/op_status.h"

#include <gtest/gtest.h>

#include "parallel/comm.h"

namespace strata::parallel {
namespace {

TEST(OpStatus, TimeoutNamesOpBytesRankAndTimeout) {
  const Status s = OpTimeout({.name = "all_gather", .bytes = 4194304}, 1, 2, 300);
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.message(),
            "all_gather of 4194304 bytes on rank 1 of 2 did not finish within 300 s: a peer rank "
            "died or hangs, or did not issue the same op");
  EXPECT_NE(OpTimeout({.name = "barrier"}, 0, 4, 0.5).message().find("within 0.5 s"),
            std::string::npos);
}

TEST(OpStatus, PointToPointNamesThePeerAndTag) {
  EXPECT_EQ(DescribeOp({.name = "send", .bytes = 8, .peer = 3, .tag = 7}, 0, 4),
            "send of 8 bytes to/from rank 3 with tag 7 on rank 0 of 4");
}

TEST(OpStatus, FailedKeepsTheCauseAndItsCode) {
  const Status s = OpFailed({.name = "broadcast", .bytes = 16}, 2, 4,
                            Status::Aborted("MPI_Ibcast: MPI_ERR_TRUNCATE"));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(),
            "broadcast of 16 bytes on rank 2 of 4 failed: MPI_Ibcast: MPI_ERR_TRUNCATE");
}

TEST(OpStatus, NotRunNamesTheFirstFailure) {
  const Status first = OpTimeout({.name = "all_gather", .bytes = 8}, 0, 2, 2);
  const Status s = OpNotRun({.name = "barrier"}, 0, 2, first);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("barrier of 0 bytes on rank 0 of 2 was not run"), std::string::npos);
  EXPECT_NE(s.message().find(first.message()), std::string::npos) << s.message();
}

TEST(OpStatus, ChecksRootPeerAndTag) {
  const OpInfo op{.name = "broadcast", .bytes = 4};
  EXPECT_TRUE(CheckRoot(op, 0, 2, 1).ok());
  EXPECT_EQ(CheckRoot(op, 0, 2, 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckRoot(op, 0, 2, -1).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckPeer(op, 0, 2, 1, 0).ok());
  EXPECT_TRUE(CheckPeer(op, 0, 2, 1, Comm::kMaxTag).ok());
  EXPECT_EQ(CheckPeer(op, 0, 2, 0, 0).code(), StatusCode::kInvalidArgument);   // itself
  EXPECT_EQ(CheckPeer(op, 0, 2, 2, 0).code(), StatusCode::kInvalidArgument);   // no such rank
  EXPECT_EQ(CheckPeer(op, 0, 2, 1, -1).code(), StatusCode::kInvalidArgument);  // bad tag
  EXPECT_EQ(CheckPeer(op, 0, 2, 1, Comm::kMaxTag + 1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::parallel
