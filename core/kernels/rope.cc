#include "core/kernels/rope.h"

#include <cmath>

#include "core/kernels/partition.h"
#include "core/kernels/rope_math.h"
#include "core/util/check.h"

namespace strata::kernels {
namespace {

// Positions per task (Note [Fixed partitions]); every element is computed alone, so any
// partition gives the same bits.
constexpr long kRowsPerChunk = 16;

template <bool kForward>
void Rotate(float* qkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
            int hs) {
  STRATA_CHECK(hs > 0 && hs % 2 == 0 && heads * hs <= ld)
      << "rope: hs = " << hs << ", heads = " << heads << ", ld = " << ld;
  const int half = hs / 2;
  detail::for_each_chunk(static_cast<long>(B) * T, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const long t = r % T;
      const float* c = cos + t * half;
      const float* s = sin + t * half;
      for (int h = 0; h < heads; ++h) {
        float* x = qkv + r * ld + static_cast<long>(h) * hs;
        for (int i = 0; i < half; ++i) {
          if constexpr (kForward) {
            detail::RopeRotate(x[i], x[i + half], c[i], s[i], &x[i], &x[i + half]);
          } else {
            detail::RopeUnrotate(x[i], x[i + half], c[i], s[i], &x[i], &x[i + half]);
          }
        }
      }
    }
  });
}

}  // namespace

void rope_table(float* cos, float* sin, int T, int hs, double theta) {
  const int half = hs / 2;
  for (int i = 0; i < half; ++i) {
    // Hugging Face: inv_freq = 1.0 / (theta ** (arange(0, hs, 2).float() / hs)) in fp32, and the
    // angle inv_freq * t is one fp32 product.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(hs);
    const float inv_freq = 1.0f / static_cast<float>(std::pow(theta, double(exponent)));
    for (int t = 0; t < T; ++t) {
      const float angle = inv_freq * static_cast<float>(t);
      cos[static_cast<long>(t) * half + i] = static_cast<float>(std::cos(double(angle)));
      sin[static_cast<long>(t) * half + i] = static_cast<float>(std::sin(double(angle)));
    }
  }
}

void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                  int hs) {
  Rotate<true>(qkv, cos, sin, B, T, ld, heads, hs);
}

void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                   int hs) {
  Rotate<false>(dqkv, cos, sin, B, T, ld, heads, hs);
}

}  // namespace strata::kernels
