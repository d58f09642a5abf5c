#include "core/nn/split_weights.h"

#include "core/kernels/linear.h"

namespace strata {

std::pair<int, int> LinearSliceRows(int rows, int slices, int s) {
  const int chunks = kernels::kLinearChunks / slices;
  return {kernels::LinearChunkBegin(rows, s * chunks),
          kernels::LinearChunkBegin(rows, (s + 1) * chunks)};
}

SplitWeights WholeWeights(const BlockSpec& block, const float* params) {
  SplitWeights w;
  for (const TensorSpec& t : block.tensors) w.tensor.push_back(params + t.offset);
  return w;
}

}  // namespace strata
