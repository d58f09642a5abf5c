#pragma once
// The SwiGLU gate of a LLaMA MLP (Hugging Face's LlamaMLP with hidden_act "silu"):
// down(silu(gate(x)) * up(x)); this kernel is the silu(g) * u between the projections.
namespace strata::kernels {
// gate_up (N, 2F): each row [g | u], the gate and up projections side by side (one GEMM makes
// both); out (N, F) = silu(g) * u, silu(g) = g / (1 + exp(-g)).
void swiglu_forward(float* out, const float* gate_up, long N, int F);
// dgate_up (N, 2F) +=: dg = dout * u * silu'(g), du = dout * silu(g).
void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, long N, int F);
}  // namespace strata::kernels
