#include "core/nn/model_layout.h"

#include <utility>

namespace strata {

void PackBlock(ModelLayout& layout, BlockSpec block) {
  layout.block_offset.push_back(layout.total_numel);
  layout.total_numel += block.numel;
  layout.blocks.push_back(std::move(block));
}

}  // namespace strata
