// The device side of Note [Deterministic reductions] (docs/parallel.md): the same rank-order
// fold as rank_fold.h, as a kernel on a CUDA stream. Only compiled with CUDA (rank_fold.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace strata::parallel {

// Enqueues out[i] = ((chunks[0][i] + chunks[1][i]) + ...) + chunks[ranks-1][i] for i < count on
// `stream`, chunk r at chunks + r * count, in the element type's arithmetic (plain IEEE adds:
// no FMA can form, no flush to zero). Device pointers; out must not overlap chunks 1 and up.
// Returns the launch's error.
cudaError_t LaunchRankFold(const float* chunks, size_t count, int ranks, float* out,
                           cudaStream_t stream);
cudaError_t LaunchRankFold(const double* chunks, size_t count, int ranks, double* out,
                           cudaStream_t stream);

}  // namespace strata::parallel
