#include "core/kernels/swiglu.h"

#include "core/kernels/partition.h"
#include "core/kernels/swiglu_math.h"

namespace strata::kernels {
namespace {

// Rows per task (Note [Fixed partitions]); elements are independent.
constexpr long kRowsPerChunk = 16;

[[gnu::noinline]] void forward_row(float* __restrict y, const float* __restrict g,
                                   const float* __restrict u, int F) {
  for (int i = 0; i < F; ++i) y[i] = detail::SwigluOut(g[i], u[i]);
}

[[gnu::noinline]] void backward_row(float* __restrict dg, float* __restrict du,
                                    const float* __restrict dy, const float* __restrict g,
                                    const float* __restrict u, int F) {
  for (int i = 0; i < F; ++i) {
    dg[i] += detail::SwigluDgate(g[i], u[i], dy[i]);
    du[i] += detail::SwigluDup(g[i], dy[i]);
  }
}

}  // namespace

void swiglu_forward(float* out, const float* gate_up, long N, int F) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const float* g = gate_up + r * 2 * F;
      forward_row(out + r * F, g, g + F, F);
    }
  });
}

void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, long N, int F) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const float* g = gate_up + r * 2 * F;
      float* dg = dgate_up + r * 2 * F;
      backward_row(dg, dg + F, dout + r * F, g, g + F, F);
    }
  });
}

}  // namespace strata::kernels
