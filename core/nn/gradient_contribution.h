// The helpers every model's backward passes share (core/nn/gpt_blocks.cc, tp_blocks.cc,
// models/llama/llama_model.cc): the gradient-contribution rule of core/nn/model.h.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "core/device/kernel_table.h"
#include "core/nn/gpt_layout.h"

namespace strata::nn_internal {

inline int64_t Align(int64_t n) { return AlignedFloats(n); }

// Zeroes device memory through the table (host code must not touch it: kernel_table.h).
inline void Zero(const KernelTable& k, float* p, int64_t n) { k.zero(p, long(n)); }

// One backward call's contribution to the gradient tensors `grads` (pointer, floats), made by
// `make`, kernels that accumulate (+=) into the pointers they are given: straight into the
// zeroed gradients when `first`, else into zeroed scratch, then added (Note [Gradient
// contributions] in gpt_blocks.h).
template <size_t N, typename Make>
void Contribute(const KernelTable& k, bool first, float* scratch,
                const std::array<std::pair<float*, int64_t>, N>& grads, const Make& make) {
  std::array<float*, N> into{};
  float* next = scratch;
  for (size_t i = 0; i < N; ++i) {
    if (first) {
      into[i] = grads[i].first;
      continue;
    }
    into[i] = next;
    Zero(k, next, grads[i].second);
    next += Align(grads[i].second);
  }
  make(into);
  if (first) return;
  for (size_t i = 0; i < N; ++i) {
    k.residual_forward(grads[i].first, grads[i].first, into[i], grads[i].second);
  }
}

}  // namespace strata::nn_internal
