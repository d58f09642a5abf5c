// StatePages: the model's state (params, grads, adam_m, adam_v of every block) laid into
// pages by memory/page_plan.h, indexed the way the Engine needs it: per (block, role) its pages,
// and per page the pieces of tensors it holds with their offsets in the block's contiguous layout
// (core/nn/model_layout.h). The four roles of one block have the same pieces at the same page
// index, so one page index names a param page, its grad page and its two moment pages.
//
// Note [Pieces, not pages, into slots]
// The page plan never lets a tensor that fits in a page
// straddle two pages, so it pads where the block layout does not: page k of a block is *not*
// bytes [k * page_bytes, (k+1) * page_bytes) of the block. Moves between a page and a device slot
// therefore copy each piece to its own offset (a transformer block has 12 tensors: at most a few
// dozen copies per block).
//
// Sharded blocks (Note [Shards] in shard_plan.h): only this rank's floats of the block are paged;
// their pieces keep their offsets in the whole block's layout, so they load into and come down
// from a gathered slot at their own place.
//
// Immutable after Make; share freely between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "core/nn/model_layout.h"
#include "core/util/status.h"
#include "memory/memory_manager.h"
#include "memory/page_plan.h"
#include "scheduler/shard_plan.h"

namespace strata::scheduler {

struct Piece {
  memory::PageId page = 0;
  uint64_t page_offset = 0;   // bytes into the page
  uint64_t block_offset = 0;  // bytes into the block's contiguous layout
  uint64_t bytes = 0;
  int tensor = 0;  // index into BlockSpec::tensors
};

class StatePages {
 public:
  // Roles param, grad, adam_m, adam_v, and master when `with_master` (--delayed-update).
  // `shards`: what this rank owns (nullptr: every block whole).
  static Result<StatePages> Make(const ModelLayout& layout, uint64_t page_bytes,
                                 bool with_master = false, const ShardPlan* shards = nullptr);

  const memory::PagePlan& plan() const { return plan_; }
  uint64_t page_bytes() const { return plan_.options.page_bytes; }
  uint64_t num_pages() const { return plan_.num_pages(); }
  const std::vector<memory::PageId>& pages(int block, memory::Role role) const {
    return groups_[index(block, role)].pages;
  }
  // The pieces held by page index k of (block, role).
  const std::vector<Piece>& pieces(int block, memory::Role role, size_t k) const {
    return groups_[index(block, role)].pieces[k];
  }
  uint64_t pages_of_role(memory::Role role) const;
  // Bytes of every page of one block, all roles.
  uint64_t block_state_bytes(int block) const;

 private:
  struct Group {
    std::vector<memory::PageId> pages;
    std::vector<std::vector<Piece>> pieces;  // per page index
  };
  size_t index(int block, memory::Role role) const {
    return size_t(block) * memory::kNumRoles + static_cast<size_t>(role);
  }
  memory::PagePlan plan_;
  std::vector<Group> groups_;
};

// Host-side helpers over the MemoryManager (blocking; any thread).
// Writes a block's values (its contiguous layout) into the role's pages; padding becomes zero.
Status WriteBlockPages(memory::MemoryManager& mm, const StatePages& sp, int block,
                       memory::Role role, const float* values);
// Reads a role's pages of a block into its contiguous layout (padding untouched).
Status ReadBlockPages(memory::MemoryManager& mm, const StatePages& sp, int block, memory::Role role,
                      float* values);

}  // namespace strata::scheduler
