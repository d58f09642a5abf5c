#pragma once
// Linear layer in Hugging Face Conv1D layout: weight is (C, OC), out = inp @ weight + bias.
namespace strata::kernels {
// out (N, OC), inp (N, C), weight (C, OC), bias (OC) or nullptr.
void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC);
// dinp (N, C) += dout @ weight^T   (dinp may be nullptr: not computed)
// dweight (C, OC) += inp^T @ dout
// dbias (OC) += sum over rows of dout  (dbias may be nullptr)
void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int C, int OC);
}  // namespace strata::kernels
