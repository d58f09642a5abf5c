// The global gradient norm in one canonical order, shared by the in-memory trainer and the
// Engine so that both clip with the same bits (Note [Canonical arithmetic] in trainer.h).
//
// Note [Norm in chunk order]
// A block's sum of squares is made of partial sums over fixed chunks of kNormChunkFloats floats
// (4 KiB) from the start of the block's contiguous layout, each in double over eight lanes
// combined in a fixed order, then added in chunk order; the blocks' sums are added in block
// order. It depends on neither the page size nor where pages live, and data parallelism with
// replicated state computes it on identical summed gradients. Its padding between tensors is
// read too: gradients keep it zero.
// Sharded state (Note [Shards] in shard_plan.h) keeps it: shards start on chunk boundaries, so a
// rank's chunk partials are exactly one rank's, and gathered in rank order they are the block's
// partials in chunk order (the last shards' padding chunks are zeros, added last: no change).
#pragma once

#include <cstdint>
#include <span>

#include "core/device/kernel_table.h"
#include "core/kernels/norms.h"
#include "core/nn/model_layout.h"

namespace strata {

inline constexpr int64_t kNormChunkFloats = kernels::kNormChunkFloats;

// The partial sums of squares of `n` floats of device memory from a chunk boundary:
// (n + 1023) / 1024 of them into the host array `out`, in chunk order, through the device's
// table (k.chunk_sums_of_squares: the same bits on every backend). Call it from a function given
// to the device's Stream::launch; deterministic.
void ChunkSumsOfSquares(const KernelTable& k, const float* x, int64_t n, double* out);

// Sum of squares of one block's gradient (block.numel floats of device memory, laid out as its
// BlockSpec says): its chunks' partial sums added in order (Note [Norm in chunk order]).
double BlockGradSumOfSquares(const KernelTable& k, const BlockSpec& block,
                             const float* block_grads);

// Tensor parallelism: the sum of squares of a rank's slice of a block (MakeTpLayout's), tensor by
// tensor, each in chunk order; the replicated tensors (TpReplicated) only `with_replicated`, so
// that the tp group's sums add up to the whole block's once (tp rank 0 counts them). Equal to the
// whole block's sum up to rounding: the chunks and their order differ.
double TpBlockGradSumOfSquares(const KernelTable& k, const BlockSpec& block,
                               const float* block_grads, bool with_replicated);

// Partial sums added in order, from 0.0: the block's sum from its chunk partials.
double SumInChunkOrder(std::span<const double> partials);

// sqrt of the per-block sums added in block index order.
double GlobalGradNorm(std::span<const double> block_sums);

}  // namespace strata
