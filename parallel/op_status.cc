#include "parallel/op_status.h"

#include <sstream>

#include "parallel/comm.h"

namespace strata::parallel {

std::string DescribeOp(const OpInfo& op, int rank, int size) {
  std::ostringstream out;
  out << op.name << " of " << op.bytes << " bytes";
  if (op.peer >= 0) out << " to/from rank " << op.peer << " with tag " << op.tag;
  out << " on rank " << rank << " of " << size;
  return out.str();
}

Status OpTimeout(const OpInfo& op, int rank, int size, double timeout_s) {
  std::ostringstream out;
  out << DescribeOp(op, rank, size) << " did not finish within " << timeout_s
      << " s: a peer rank died or hangs, or did not issue the same op";
  return Status::Timeout(out.str());
}

Status OpFailed(const OpInfo& op, int rank, int size, const Status& cause) {
  return cause.with_context(DescribeOp(op, rank, size) + " failed");
}

Status OpNotRun(const OpInfo& op, int rank, int size, const Status& first_failure) {
  return Status::Aborted(DescribeOp(op, rank, size) +
                         " was not run: an earlier op on this comm failed and the comm cannot "
                         "be used after a failure (end the job with Comm::abort): " +
                         first_failure.message());
}

Status CheckRoot(const OpInfo& op, int rank, int size, int root) {
  if (root >= 0 && root < size) return Status::Ok();
  return Status::InvalidArgument(DescribeOp(op, rank, size) + ": root " + std::to_string(root) +
                                 " is not a rank (0 to " + std::to_string(size - 1) + ")");
}

Status CheckPeer(const OpInfo& op, int rank, int size, int peer, int tag) {
  if (peer < 0 || peer >= size || peer == rank) {
    return Status::InvalidArgument(DescribeOp(op, rank, size) + ": peer " + std::to_string(peer) +
                                   " is not another rank (0 to " + std::to_string(size - 1) +
                                   ", not " + std::to_string(rank) + ")");
  }
  if (tag < 0 || tag > Comm::kMaxTag) {
    return Status::InvalidArgument(DescribeOp(op, rank, size) + ": tag " + std::to_string(tag) +
                                   " is outside 0 to " + std::to_string(Comm::kMaxTag));
  }
  return Status::Ok();
}

}  // namespace strata::parallel
