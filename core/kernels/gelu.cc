#include "core/kernels/gelu.h"

#include "core/kernels/gelu_math.h"
#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {

// Elements per task (Note [Fixed partitions]).
constexpr long kChunk = 16384;

}  // namespace

void gelu_forward(float* out, const float* inp, long n) {
  detail::for_each_chunk(n, kChunk, [&](long i0, long i1) {
    for (long i = i0; i < i1; ++i) out[i] = detail::GeluForward(inp[i]);
  });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, long n) {
  detail::for_each_chunk(n, kChunk, [&](long i0, long i1) {
    for (long i = i0; i < i1; ++i) dinp[i] += detail::GeluGrad(inp[i]) * dout[i];
  });
}

}  // namespace strata::kernels
