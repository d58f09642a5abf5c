// bfloat16 rounding, shared by the CPU and CUDA kernels (hd.h): the first piece of `--dtype bf16`
// (GEMM operands rounded to bf16, products accumulated in fp32; master weights, gradients and
// moments stay fp32). A bf16 value is kept as the float with the same value (its low 16 bits
// zero), so the fp32 kernels can take rounded operands as they are.
#pragma once

#include <cstdint>

#include "core/kernels/hd.h"

namespace strata::kernels::detail {

// x rounded to the nearest bfloat16, ties to even (as torch's .to(torch.bfloat16) and CUDA's
// __float2bfloat16_rn): finite values that round past the largest bf16 become infinities,
// infinities stay, and a NaN stays a (quiet) NaN with its sign.
STRATA_HD float RoundToBf16(float x) {
  const uint32_t bits = static_cast<uint32_t>(FloatBits(x));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return BitsToFloat(static_cast<int32_t>((bits | 0x00400000u) & 0xffff0000u));  // quiet NaN
  }
  const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return BitsToFloat(static_cast<int32_t>(rounded & 0xffff0000u));
}

}  // namespace strata::kernels::detail
