#include "core/kernels/adamw.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/kernels/adamw_math.h"
#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {

// Elements per task (Note [Fixed partitions]).
constexpr long kChunk = 16384;

// The scalar loop vectorises at the build's -march (sqrtf is the instruction under
// -fno-math-errno: Note [Kernels without trapping math] in core/CMakeLists.txt). AVX-512 gets the
// same operations written with intrinsics, chosen at run time on a CPU that has it (whatever
// -march the build used: CI's x86-64-v3 tree runs it on an AVX-512 machine too). Same bits either
// way (AdamWTest.VectorAndScalarPathsGiveTheSameBits).
void adamw_scalar(float* param, const float* grad, float* m, float* v, long i, long n,
                  const detail::AdamWScalars& k) {
  for (; i < n; ++i) detail::AdamWElement(param[i], grad[i], m[i], v[i], k);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void adamw_avx512(float* param, const float* grad, float* m,
                                                     float* v, long n,
                                                     const detail::AdamWScalars& k) {
  long i = 0;
  const __m512 grad_scale = _mm512_set1_ps(k.grad_scale), decay = _mm512_set1_ps(k.decay),
               b1 = _mm512_set1_ps(k.b1), one_minus_b1 = _mm512_set1_ps(k.one_minus_b1),
               b2 = _mm512_set1_ps(k.b2), one_minus_b2 = _mm512_set1_ps(k.one_minus_b2),
               bc2 = _mm512_set1_ps(k.bias_correction2_sqrt), eps = _mm512_set1_ps(k.eps),
               neg_step = _mm512_set1_ps(k.neg_step_size);
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_mul_ps(_mm512_loadu_ps(grad + i), grad_scale);
    const __m512 p = _mm512_mul_ps(_mm512_loadu_ps(param + i), decay);
    const __m512 mi =
        _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(m + i), b1), _mm512_mul_ps(one_minus_b1, g));
    const __m512 vi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(v + i), b2),
                                    _mm512_mul_ps(_mm512_mul_ps(one_minus_b2, g), g));
    // maskz with a full mask: GCC 12 warns (falsely) about _mm512_sqrt_ps's undefined source.
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_maskz_sqrt_ps(0xFFFF, vi), bc2), eps);
    _mm512_storeu_ps(param + i,
                     _mm512_add_ps(p, _mm512_div_ps(_mm512_mul_ps(neg_step, mi), denom)));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
  }
  adamw_scalar(param, grad, m, v, i, n, k);
}
#endif

void adamw_range(float* param, const float* grad, float* m, float* v, long n,
                 const detail::AdamWScalars& k) {
#if defined(__x86_64__)
  // A read-only fact of the machine, set once (thread-safe static initialisation).
  static const bool kAvx512 = __builtin_cpu_supports("avx512f");
  if (kAvx512) return adamw_avx512(param, grad, m, v, n, k);
#endif
  adamw_scalar(param, grad, m, v, 0, n, k);
}

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, long n,
                  const AdamWParams& hp, float grad_scale) {
  const detail::AdamWScalars k = detail::AdamWScalarsOf(hp, grad_scale);
  detail::for_each_chunk(n, kChunk, [&](long i0, long i1) {
    adamw_range(param + i0, grad + i0, m + i0, v + i0, i1 - i0, k);
  });
}

float clip_coefficient(double total_norm, float max_norm) {
  return static_cast<float>(std::min(1.0, max_norm / (total_norm + 1e-6)));
}

}  // namespace strata::kernels
