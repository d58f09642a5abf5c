// The compute dtype of a run (`--dtype fp32|bf16`), shared by the CPU and CUDA kernels.
//
// Note [bf16 compute]
// With bf16, every GEMM operand is rounded to bfloat16 (nearest even, RoundToBf16 in
// bf16_math.h) as the GEMM reads it, and the products accumulate in fp32 into fp32 outputs: the
// mixed precision of torch.autocast(dtype=torch.bfloat16) for matmuls, and what a GPU's bf16
// tensor cores compute. Everything else stays fp32: the activations as stored, the element-wise
// and row kernels (layernorm, GELU, softmax, cross-entropy), and the pages: master weights,
// gradients and AdamW's moments. bf16's exponent range is fp32's, so no loss scaling is needed.
// Products of two bf16 values are exact in fp32, so a backend differs from another only in the
// order of its fp32 sums, as with --dtype fp32. Rounding is per element, so tiles, row chunks
// and page boundaries do not change it: every budget still gives the same bits.
#pragma once

namespace strata::kernels {

enum class Dtype { kFp32, kBf16 };

inline const char* DtypeName(Dtype d) { return d == Dtype::kBf16 ? "bf16" : "fp32"; }

}  // namespace strata::kernels
