#pragma once
// AdamW with torch.optim.AdamW's semantics (decoupled decay first, then the bias-corrected
// Adam step), element-wise over one contiguous range, and the global-norm helpers for
// torch.nn.utils.clip_grad_norm_.
namespace strata::kernels {
struct AdamWParams {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // the caller passes 0 for tensors that are not decayed
  long step = 1;              // 1-based step count, for the bias corrections
};
// For each i: p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
// p -= (lr / (1-b1^t)) * m / (sqrt(v) / sqrt(1-b2^t) + eps). `grad_scale` multiplies g first
// (the clipping coefficient; 1 = none).
void adamw_update(float* param, const float* grad, float* m, float* v, long n,
                  const AdamWParams& hp, float grad_scale);
// (Sums of squares for the global norm: core/kernels/norms.h.)
// torch's clip_grad_norm_ coefficient: min(1, max_norm / (total_norm + 1e-6)).
float clip_coefficient(double total_norm, float max_norm);
}  // namespace strata::kernels
