// STRATA_HD marks the per-element and per-row arithmetic that the CPU kernels (core/kernels/*.cc)
// and the CUDA kernels (core/kernels/cuda/*.cu) both call, so the math the CPU tests check is the
// math the GPU runs; only the loops, launches and reductions differ per backend.
//
// Note [Same bits on both backends]
// Per-element results agree bit for bit between the backends because:
// - both compilers keep every multiply and add separate: the C++ sources (and the host code of
//   the .cu files) are compiled with -ffp-contract=off, the device code with --fmad=false
//   (CMakeLists.txt). GCC's default in C++ is to contract a*b+c into FMAs, measured here to
//   change the bits of a quarter of GeluGrad's and AdamW's elements;
// - add, multiply, divide and square root are correctly rounded on both (nvcc's defaults
//   -prec-div=true -prec-sqrt=true), and the transcendental functions the kernels need are
//   written out as float arithmetic (fast_math.h), not taken from libm or CUDA's math library.
// What differs is the order of the reductions (row sums, maxima, GEMMs), so a row's or a GEMM's
// result agrees only to rounding; the GPU tests compare those with a tolerance.
//
// Headers that use STRATA_HD are compiled by nvcc as C++17: keep them C++17-clean and free of
// host-only calls inside STRATA_HD functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__ __forceinline__
#else
#define STRATA_HD inline
#endif

namespace strata::kernels::detail {

// The bits of a float as an int32 and back (std::bit_cast is C++20, which nvcc here lacks).
STRATA_HD int32_t FloatBits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_int(x);
#else
  int32_t i;
  std::memcpy(&i, &x, sizeof(i));
  return i;
#endif
}

STRATA_HD float BitsToFloat(int32_t i) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(i);
#else
  float x;
  std::memcpy(&x, &i, sizeof(x));
  return x;
#endif
}

// Correctly rounded square root on both backends.
STRATA_HD float SqrtRn(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

// The natural log in double (a loss's log-sum-exp). Both sides are within an ulp of exact; the
// backends may differ in the last bit.
STRATA_HD double LogDouble(double x) {
#if defined(__CUDA_ARCH__)
  return ::log(x);
#else
  return std::log(x);
#endif
}

}  // namespace strata::kernels::detail
