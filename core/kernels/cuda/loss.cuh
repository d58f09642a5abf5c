// The mean loss of the cross-entropy forwards (crossentropy.cu, vocab_parallel.cu), returned to
// the host as the CPU kernels compute it. Compiled by nvcc (C++17) only.
#pragma once

namespace strata::kernels::cuda {

// Enqueues on the current launch's stream the sum of losses[0, N) (device memory, N >= 1) in
// double in row order, as the CPU kernels (total += losses[r], r = 0, 1, ...), and returns
// static_cast<float>(total / N) once the stream has reached it: the only place these kernels
// wait. Returns NaN when a CUDA call fails (the error is recorded on the stream).
float MeanLossToHost(const double* losses, int N, const char* what);

}  // namespace strata::kernels::cuda
