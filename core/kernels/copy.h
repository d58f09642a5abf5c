#pragma once
// Copying device memory and finishing a launch's kernels: what a step does around its
// collectives (kernel_table.h's `copy` and `finish`).
namespace strata::kernels {

// dst[0..n) = src[0..n); the ranges must not overlap.
void copy(float* dst, const float* src, long n);

// Returns once every kernel this launch has started has completed, so that another engine (a
// Comm's stream) may read what they wrote. The CPU kernels run to completion before returning:
// nothing to wait for.
void finish();

}  // namespace strata::kernels
