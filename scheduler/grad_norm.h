// The global gradient norm in one canonical order, shared by the in-memory trainer and the
// Engine so that both clip with the same bits (Note [Canonical arithmetic] in trainer.h).
//
// Note [Norm in page order]
// A block's sum of squares is made of partial sums over fixed chunks of kNormChunkFloats floats
// (4 KiB, the smallest page) from the block's start, each in double over eight lanes combined in
// a fixed order, then added in chunk order; the blocks' sums are added in block order. A page
// (a power of two >= 4 KiB, from the block's start) holds whole chunks, so a rank that holds only
// some of a block's pages can make their chunks' partial sums, and every rank adding all of them
// in chunk order gets the single-rank norm: it depends on neither the page size nor the
// sharding. The block's padding between tensors is read too: gradients keep it zero.
#pragma once

#include <cstdint>
#include <span>

#include "core/nn/gpt_layout.h"

namespace strata {

inline constexpr int64_t kNormChunkFloats = 1024;

// The partial sums of squares of `n` floats from a chunk boundary: (n + 1023) / 1024 of them
// into `out`, in chunk order. Runs on the calling thread's TBB arena; deterministic.
void ChunkSumsOfSquares(const float* x, int64_t n, double* out);

// Sum of squares of one block's gradient (block.numel floats, laid out as its BlockSpec says):
// its chunks' partial sums added in order (Note [Norm in page order]).
double BlockGradSumOfSquares(const BlockSpec& block, const float* block_grads);

// sqrt of the per-block sums added in block index order.
double GlobalGradNorm(std::span<const double> block_sums);

}  // namespace strata
