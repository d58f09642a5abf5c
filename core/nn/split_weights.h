// A layer's parameters under split operators (--split-ops; Note [Split operators] in
// scheduler/split_plan.h): the tensors the description marks `split` (TensorSpec::split) are never
// resident whole, and the layer's ops ask the runtime for them slice by slice.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "core/nn/block_spec.h"

namespace strata {

// Rows [r0, r1) of slice s of a weight of `rows` rows (its stored shape's dimension 0) cut in
// `slices` slices of whole forward chunks (Note [Linear forward in row chunks] in
// core/kernels/linear.h); slices divides kernels::kLinearChunks.
std::pair<int, int> LinearSliceRows(int rows, int slices, int s);

// `tensor[t]`: where tensor t of the block is (nullptr for a split tensor). `slice(t, s)` returns
// rows LinearSliceRows(rows, slices, s) of split tensor t, and is called once per slice in the
// order the ops use them: forward, the split tensors in layout order; backward, in reverse
// layout order; each tensor's slices in order. The ops give the bits of the whole layer's.
struct SplitWeights {
  std::vector<const float*> tensor;
  int slices = 1;
  std::function<const float*(int tensor, int slice)> slice;
};

// Every tensor of `block` whole in its contiguous `params`.
SplitWeights WholeWeights(const BlockSpec& block, const float* params);

}  // namespace strata
