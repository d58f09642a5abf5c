// RoPE's per-pair arithmetic, shared by the CPU and CUDA kernels (hd.h): each multiply and add
// rounded separately (no FMA), as torch computes q * cos + rotate_half(q) * sin.
#pragma once

#include "core/kernels/hd.h"

namespace strata::kernels::detail {

// (x1, x2) = (x[i], x[i + half]) rotated by the angle whose cosine and sine are c, s.
STRATA_HD void RopeRotate(float x1, float x2, float c, float s, float* y1, float* y2) {
  *y1 = x1 * c + (-x2) * s;
  *y2 = x2 * c + x1 * s;
}

// The transpose of RopeRotate (the rotation by -angle), for the gradient.
STRATA_HD void RopeUnrotate(float dy1, float dy2, float c, float s, float* dx1, float* dx2) {
  *dx1 = dy1 * c + dy2 * s;
  *dx2 = dy2 * c + (-dy1) * s;
}

}  // namespace strata::kernels::detail
