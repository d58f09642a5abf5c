#pragma once
// GELU, tanh approximation (GPT-2's; torch's gelu(approximate="tanh")).
namespace strata::kernels {
void gelu_forward(float* out, const float* inp, long n);
// dinp += gelu'(inp) * dout
void gelu_backward(float* dinp, const float* inp, const float* dout, long n);
}  // namespace strata::kernels
