// The helpers every model's backward passes share (models/gpt2/gpt_blocks.cc,
// models/llama/llama_model.cc): the gradient-contribution rule of core/nn/model.h.
//
// Note [Gradient contributions]
// A parameter gradient is the left fold of its contributions in a fixed order: each backward
// call's contribution is made from zero, in the same kernels whatever its destination, then
// added to the running sum element by element (g = g + c, zeros included). The step's first
// contribution to a tensor is made straight in the zeroed gradient: the same bits, with no add.
// - Why: a data-parallel run sums its ranks' gradients exactly so (Note [Deterministic
//   reductions] in parallel/comm.h), so dp=N with one micro-batch per rank gives the bits of
//   one rank running N micro-batches. Letting a later micro-batch's kernels accumulate into the
//   running sum itself (+=) would add their partial sums one by one: other bits.
// - The order: a block's micro-batches in index order. The tied tensor: every head contribution in
//   micro-batch order, then every embedding contribution (Note [Tied gradient order] in
//   scheduler/activations.h).
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "core/device/kernel_table.h"
#include "core/nn/block_spec.h"

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
