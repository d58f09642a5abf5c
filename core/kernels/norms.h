#pragma once
#include <cstdint>
// Zeroing and the gradient norm's partial sums: the two things a training step does to device
// memory besides the model's ops (kernel_table.h's `zero` and `chunk_sums_of_squares`).
namespace strata::kernels {

// Floats per partial sum of the gradient norm (Note [Norm in chunk order] in
// scheduler/grad_norm.h): 4 KiB.
inline constexpr long kNormChunkFloats = 1024;

// x[0..n) = 0.0f.
void zero(float* x, long n);

// The partial sums of squares of x[0..n), one per chunk of kNormChunkFloats floats from x, into
// out[0 .. (n + kNormChunkFloats - 1) / kNormChunkFloats), in chunk order. Each chunk is summed
// in double over eight lanes (lane l takes elements l, l + 8, ... in order) combined as
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), on every backend: the same bits on each.
// `out` is host memory (the sums come back to the host), so the call completes before it
// returns. Deterministic for any thread count.
void chunk_sums_of_squares(const float* x, long n, double* out);

// Sum of squares of x[0..n) of host memory in double: partial sums over chunks of 65536 floats,
// each in chunk_sums_of_squares's lane order, added in chunk order. Deterministic for any thread
// count. (The embedding runtime's chunk norms.)
double sum_of_squares(const float* x, long n);

}  // namespace strata::kernels
