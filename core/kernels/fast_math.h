// Private to core/kernels: exp and sigmoid written as straight-line float code, so that loops
// calling them vectorise (libm's expf/tanhf are calls the compiler cannot vectorise without
// -ffast-math, and a GPT step evaluates tens of millions of them in softmax and GELU).
// Being plain code, they give the same bits in the vector body and in the scalar tail, and on
// the GPU (STRATA_HD, Note [Same bits on both backends] in hd.h).
#pragma once

#include <cstdint>

#include "core/kernels/hd.h"

namespace strata::kernels::detail {

// e^x for float x, relative error < 1e-7 on [-87, 88] (measured max 8.5e-8); 0 below -87
// (where the true value is subnormal) and e^88 above 88 (no infinities).
STRATA_HD float exp_approx(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  // ln 2 split in a part with few mantissa bits (exact when multiplied by k) and the rest.
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer (without -ffast-math the
  // compiler keeps both operations).
  constexpr float kRound = 12582912.0f;
  // std::min(std::max(x, -87), 88) spelled out (std:: is host-only), NaN staying NaN.
  const float lo = x < -87.0f ? -87.0f : x;
  const float xc = 88.0f < lo ? 88.0f : lo;
  const float k_rounded = xc * kLog2e + kRound;
  const float k = k_rounded - kRound;
  float r = xc - k * kLn2Hi;
  r = r - k * kLn2Lo;
  // Cephes expf polynomial for e^r - 1 - r on |r| <= ln2/2.
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  // 2^k from the integer that the rounding left in the low mantissa bits of k_rounded (no
  // float-to-int conversion, which would be undefined for a NaN x).
  const int32_t ki = FloatBits(k_rounded) - FloatBits(kRound);
  const float scale = BitsToFloat((ki + 127) << 23);
  return x < -87.0f ? 0.0f : y * scale;
}

// 1 / (1 + e^-z).
STRATA_HD float sigmoid_approx(float z) { return 1.0f / (1.0f + exp_approx(-z)); }

}  // namespace strata::kernels::detail
