#pragma once
// LayerNorm over the last dimension, eps 1e-5 (torch.nn.LayerNorm's default).
namespace strata::kernels {
inline constexpr float kLayerNormEps = 1e-5f;
// out (N, C); mean, rstd (N) are saved for backward; inp (N, C); weight, bias (C).
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C);
// dinp (N, C) +=, dweight (C) +=, dbias (C) +=.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int N, int C);
}  // namespace strata::kernels
