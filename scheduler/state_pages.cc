#include "scheduler/state_pages.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "memory/page_plan_layout.h"

namespace strata::scheduler {

using memory::PageId;
using memory::Role;

namespace {

// One page-plan entry: the floats [begin, begin + numel) of tensor `tensor` of its block.
struct OwnedPiece {
  int tensor = 0;
  int64_t begin = 0;
};

// The tensors' pieces inside [first, last) of each block's layout, for every role: whole tensors
// keep their names (so an unsharded plan is LayoutTensorEntries'), cut ones are "name[a:b]".
std::vector<memory::TensorEntry> OwnedEntries(const ModelLayout& layout,
                                              const std::vector<Role>& roles,
                                              const ShardPlan* shards,
                                              std::vector<OwnedPiece>* owned) {
  std::vector<memory::TensorEntry> entries;
  for (int b = 0; b < layout.num_blocks(); ++b) {
    const int64_t first = shards ? shards->owned_begin(b) : 0;
    const int64_t last = shards ? shards->owned_end(b) : layout.blocks[b].numel;
    for (Role role : roles) {
      const std::vector<TensorSpec>& tensors = layout.blocks[b].tensors;
      for (size_t t = 0; t < tensors.size(); ++t) {
        const int64_t lo = std::max(first, tensors[t].offset);
        const int64_t hi = std::min(last, tensors[t].offset + tensors[t].numel);
        if (lo >= hi) continue;
        std::string name = tensors[t].name;
        if (hi - lo != tensors[t].numel) {
          name += "[" + std::to_string(lo - tensors[t].offset) + ":" +
                  std::to_string(hi - tensors[t].offset) + "]";
        }
        entries.push_back(memory::TensorEntry{b, role, std::move(name), hi - lo});
        owned->push_back(OwnedPiece{int(t), lo - tensors[t].offset});
      }
    }
  }
  return entries;
}

}  // namespace

Result<StatePages> StatePages::Make(const ModelLayout& layout, uint64_t page_bytes,
                                    bool with_master, const ShardPlan* shards) {
  StatePages sp;
  memory::PagePlanOptions opt;
  opt.page_bytes = page_bytes;
  opt.tensor_align_bytes = kTensorAlignFloats * 4;
  std::vector<Role> roles(std::begin(memory::kTrainingRoles), std::end(memory::kTrainingRoles));
  if (with_master) roles.push_back(Role::kMaster);
  std::vector<OwnedPiece> owned;
  std::vector<memory::TensorEntry> entries = OwnedEntries(layout, roles, shards, &owned);
  STRATA_ASSIGN_OR_RETURN(sp.plan_, memory::MakePagePlan(entries, opt));
  sp.groups_.resize(size_t(layout.num_blocks()) * memory::kNumRoles);
  for (size_t i = 0; i < sp.plan_.tensors.size(); ++i) {
    const memory::TensorEntry& e = sp.plan_.tensors[i];
    const TensorSpec& spec = layout.blocks[e.block].tensors[owned[i].tensor];
    const uint64_t at = uint64_t(spec.offset + owned[i].begin) * 4;  // in the block's layout
    Group& g = sp.groups_[sp.index(e.block, e.role)];
    for (const memory::TensorSpan& s : sp.plan_.spans_of(i)) {
      if (g.pages.empty() || g.pages.back() != s.page) {
        STRATA_CHECK(g.pages.empty() || s.page == g.pages.back() + 1);
        g.pages.push_back(s.page);
        g.pieces.emplace_back();
      }
      g.pieces.back().push_back(
          Piece{s.page, s.page_offset_bytes, at + s.tensor_offset_bytes, s.bytes, owned[i].tensor});
    }
  }
  // The engine relies on every role of a block having the same pieces at the same page index.
  for (int b = 0; b < layout.num_blocks(); ++b) {
    const Group& param = sp.groups_[sp.index(b, Role::kParam)];
    for (int r = 1; r < memory::kNumRoles; ++r) {
      const Group& other = sp.groups_[sp.index(b, Role(r))];
      if (other.pages.empty()) continue;  // a role the plan does not hold
      STRATA_CHECK_EQ(other.pieces.size(), param.pieces.size());
      for (size_t k = 0; k < param.pieces.size(); ++k) {
        STRATA_CHECK_EQ(other.pieces[k].size(), param.pieces[k].size());
        for (size_t i = 0; i < param.pieces[k].size(); ++i) {
          const Piece &a = param.pieces[k][i], &o = other.pieces[k][i];
          STRATA_CHECK(a.page_offset == o.page_offset && a.block_offset == o.block_offset &&
                       a.bytes == o.bytes && a.tensor == o.tensor)
              << "block " << b << " role " << r << " page index " << k;
        }
      }
    }
  }
  return sp;
}

uint64_t StatePages::pages_of_role(Role role) const {
  uint64_t n = 0;
  for (size_t i = static_cast<size_t>(role); i < groups_.size(); i += memory::kNumRoles) {
    n += groups_[i].pages.size();
  }
  return n;
}

uint64_t StatePages::block_state_bytes(int block) const {
  uint64_t pages = 0;
  for (int r = 0; r < memory::kNumRoles; ++r) pages += groups_[index(block, Role(r))].pages.size();
  return pages * page_bytes();
}

Status WriteBlockPages(memory::MemoryManager& mm, const StatePages& sp, int block, Role role,
                       const float* values) {
  const auto& pages = sp.pages(block, role);
  for (size_t k = 0; k < pages.size(); ++k) {
    STRATA_ASSIGN_OR_RETURN(memory::PageRef ref,
                            mm.acquire_sync(pages[k], memory::Access::kOverwrite));
    char* dst = static_cast<char*>(ref.data());
    std::memset(dst, 0, sp.page_bytes());
    for (const Piece& p : sp.pieces(block, role, k)) {
      std::memcpy(dst + p.page_offset, reinterpret_cast<const char*>(values) + p.block_offset,
                  p.bytes);
    }
  }
  return Status::Ok();
}

Status ReadBlockPages(memory::MemoryManager& mm, const StatePages& sp, int block, Role role,
                      float* values) {
  const auto& pages = sp.pages(block, role);
  for (size_t k = 0; k < pages.size(); ++k) {
    STRATA_ASSIGN_OR_RETURN(memory::PageRef ref,
                            mm.acquire_sync(pages[k], memory::Access::kRead));
    const char* src = static_cast<const char*>(ref.data());
    for (const Piece& p : sp.pieces(block, role, k)) {
      std::memcpy(reinterpret_cast<char*>(values) + p.block_offset, src + p.page_offset, p.bytes);
    }
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
