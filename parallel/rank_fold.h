// The host side of Note [Deterministic reductions] (docs/parallel.md): folding the chunks that
// the ranks contributed, in rank order, and the chunk sizes that an all-reduce pads to.
// Pure functions on host memory; any thread.
#pragma once

#include <cstddef>

namespace strata::parallel {

// out[i] = ((chunks[0][i] + chunks[1][i]) + chunks[2][i]) + ... for i < count, where chunk r
// starts at chunks + r * count, in the element type's own arithmetic. ranks >= 1. out may be
// chunk 0 but must not overlap any other chunk.
void FoldInRankOrder(const float* chunks, size_t count, int ranks, float* out);
void FoldInRankOrder(const double* chunks, size_t count, int ranks, double* out);

// Elements per rank when `count` elements are cut into `ranks` equal chunks, the last padded:
// ceil(count / ranks). ranks >= 1.
size_t PaddedChunkCount(size_t count, int ranks);

}  // namespace strata::parallel
