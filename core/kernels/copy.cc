#include "core/kernels/copy.h"

#include <cstring>

namespace strata::kernels {

void copy(float* dst, const float* src, long n) {
  if (n > 0) std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
}

void finish() {}

}  // namespace strata::kernels
