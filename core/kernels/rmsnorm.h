#pragma once
// RMSNorm over the last dimension (Hugging Face's LlamaRMSNorm): y = x * rsqrt(mean(x^2) + eps)
// * w, computed in fp32, no bias and no mean subtraction.
namespace strata::kernels {
// out (N, C); rstd (N) is saved for backward; inp (N, C); weight (C).
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                     float eps);
// dinp (N, C) +=, dweight (C) +=.
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int N, int C);
}  // namespace strata::kernels
