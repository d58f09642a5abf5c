// RoutedComm: one Comm over two backends, an op going to the one that can read its buffers.
//
// The NCCL backend moves device memory only, while a trainer also exchanges small host values
// with its peers (losses, gradient-norm partials, agreement on flags and checkpoints). Rather
// than staging those through the GPU, the NCCL Comm is a RoutedComm: ops whose buffers are device
// memory go to NCCL, ops on host memory to the MPI Comm that bootstraps it. Both backends give
// the same bits for the same inputs (Note [Deterministic reductions] in docs/parallel.md), so
// where an op runs never changes its result.
//
// Contract (comm.h's, with these additions):
// - An op's non-null buffers must all be on one side; a mix completes at once with
//   kInvalidArgument naming the op. An op with no buffer (zero bytes) stays on the side of the
//   op before it.
// - Stream order holds across the two: when an op goes to the other side than the op before
//   it, issuing it first waits for that op (and so for every earlier op) to complete. Ops on the
//   same side are ordered by their backend, as usual.
// - A failure seen there breaks the RoutedComm: later ops fail at once with kAborted naming it
//   (each backend also breaks itself on its own failures).
// - rank, size, backend, device, split, barrier and abort are the device backend's; barrier
//   first waits for the last host op.
#pragma once

#include <functional>
#include <memory>

#include "parallel/comm.h"

namespace strata::parallel {

// True when `ptr` is memory the device backend can read (for NCCL: memory of a GPU).
using IsDeviceMemory = std::function<bool(const void* ptr)>;

std::unique_ptr<Comm> CreateRoutedComm(std::unique_ptr<Comm> device, std::shared_ptr<Comm> host,
                                       IsDeviceMemory is_device_memory);

}  // namespace strata::parallel
