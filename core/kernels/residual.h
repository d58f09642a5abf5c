#pragma once
namespace strata::kernels {
// out = a + b (element-wise, n elements). out may alias a or b.
void residual_forward(float* out, const float* a, const float* b, long n);
// da += dout; db += dout.
void residual_backward(float* da, float* db, const float* dout, long n);
}  // namespace strata::kernels
