#include "memory/page_plan_layout.h"

namespace strata::memory {

std::vector<TensorEntry> LayoutTensorEntries(const ModelLayout& layout,
                                             std::span<const Role> roles) {
  std::vector<TensorEntry> out;
  for (int b = 0; b < layout.num_blocks(); ++b) {
    for (Role role : roles) {
      for (const TensorSpec& t : layout.blocks[b].tensors) {
        out.push_back(TensorEntry{b, role, t.name, t.numel});
      }
    }
  }
  return out;
}

}  // namespace strata::memory
