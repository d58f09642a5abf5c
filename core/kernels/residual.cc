#include "core/kernels/residual.h"

#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {
// Elements per task (Note [Fixed partitions]): 64 KiB of each operand.
constexpr long kChunk = 16384;
}  // namespace

void residual_forward(float* out, const float* a, const float* b, long n) {
  detail::for_each_chunk(n, kChunk, [&](long i0, long i1) {
    for (long i = i0; i < i1; ++i) out[i] = a[i] + b[i];
  });
}

void residual_backward(float* da, float* db, const float* dout, long n) {
  detail::for_each_chunk(n, kChunk, [&](long i0, long i1) {
    for (long i = i0; i < i1; ++i) {
      da[i] += dout[i];
      db[i] += dout[i];
    }
  });
}

}  // namespace strata::kernels
