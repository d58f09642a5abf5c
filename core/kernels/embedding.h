#pragma once
#include <cstdint>
// Token + position embedding: out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :].
namespace strata::kernels {
// out (B, T, C), tokens (B, T) with 0 <= id < V (checked by the caller), wte (V, C), wpe (>=T, C).
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int B, int T, int C);
// dwte (V, C) +=, dwpe (T, C) += from dout (B, T, C).
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int B, int T, int C);
}  // namespace strata::kernels
