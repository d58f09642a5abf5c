// The words of a Comm op's errors, the same for every backend: what the op was (name, bytes,
// peer), where (rank r of n), and what went wrong. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/status.h"

namespace strata::parallel {

struct OpInfo {
  const char* name = "";  // "all_gather", "all_reduce_sum(float)", "send", ...
  uint64_t bytes = 0;     // the op's input bytes on this rank (bytes_per_rank for all_gather)
  int peer = -1;          // point-to-point ops: the other rank (or the receiver of send_recv)
  int tag = -1;
};

// "all_gather of 4194304 bytes on rank 1 of 2"; "send of 8 bytes to/from rank 3 with tag 7 on
// rank 0 of 4" for point-to-point ops.
std::string DescribeOp(const OpInfo& op, int rank, int size);

// kTimeout: "<op> did not finish within 300 s: a peer rank died or hangs, or did not issue the
// same op".
Status OpTimeout(const OpInfo& op, int rank, int size, double timeout_s);
// `cause` (an MPI, CUDA or NCCL error) with the op in front; the same code.
Status OpFailed(const OpInfo& op, int rank, int size, const Status& cause);
// kAborted: the op was not run because an earlier op on the Comm failed with `first_failure`.
Status OpNotRun(const OpInfo& op, int rank, int size, const Status& first_failure);

// kInvalidArgument unless 0 <= root < size.
Status CheckRoot(const OpInfo& op, int rank, int size, int root);
// kInvalidArgument unless peer is another rank and 0 <= tag <= Comm::kMaxTag.
Status CheckPeer(const OpInfo& op, int rank, int size, int peer, int tag);

}  // namespace strata::parallel
