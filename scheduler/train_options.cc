#include "scheduler/train_options.h"

#include <cmath>

namespace strata {

kernels::Dtype ComputeDtype(const std::string& dtype) {
  return dtype == "bf16" ? kernels::Dtype::kBf16 : kernels::Dtype::kFp32;
}

float LearningRateAt(const OptimizerOptions& o, long steps, long step) {
  if (o.warmup > 0 && step < o.warmup) return o.lr * float(step + 1) / float(o.warmup);
  if (o.lr_schedule == "cosine" && steps > o.warmup) {
    const float min_lr = o.min_lr >= 0 ? o.min_lr : 0.1f * o.lr;
    const double ratio = double(step - o.warmup) / double(steps - o.warmup);
    const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));
    return float(min_lr + coeff * (o.lr - min_lr));
  }
  return o.lr;
}

}  // namespace strata
