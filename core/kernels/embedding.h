#pragma once
#include <cstdint>
// Token + position embedding: out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :].
namespace strata::kernels {
// out (B, T, C), tokens (B, T) with 0 <= id < V (checked by the caller), wte (V, C), wpe (>=T, C).
void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int B, int T, int C);
// dwte +=, dwpe (T, C) += from dout (B, T, C). dwte holds the vocabulary rows
// [vocab_begin, vocab_end) (row v at dwte + (v - vocab_begin) * C): positions whose token lies
// outside that range add nothing to it, so a caller can build the wte gradient slice by slice in
// a small buffer. dwpe may be nullptr: no position gradient.
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int B, int T, int C, int vocab_begin, int vocab_end);
}  // namespace strata::kernels
