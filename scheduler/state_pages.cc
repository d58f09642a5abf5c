#include "scheduler/state_pages.h"

#include <cstring>
#include <iterator>
#include <map>
#include <utility>

#include "memory/page_plan_gpt.h"

namespace strata::scheduler {

using memory::PageId;
using memory::Role;

Result<StatePages> StatePages::Make(const GptLayout& layout, uint64_t page_bytes,
                                    bool with_master) {
  StatePages sp;
  memory::PagePlanOptions opt;
  opt.page_bytes = page_bytes;
  opt.tensor_align_bytes = kTensorAlignFloats * 4;
  std::vector<Role> roles(std::begin(memory::kGptTrainingRoles),
                          std::end(memory::kGptTrainingRoles));
  if (with_master) roles.push_back(Role::kMaster);
  std::vector<memory::TensorEntry> entries = memory::GptTensorEntries(layout, roles);
  STRATA_ASSIGN_OR_RETURN(sp.plan_, memory::MakePagePlan(entries, opt));
  sp.groups_.resize(size_t(layout.num_blocks()) * memory::kNumRoles);
  // Entries come block by block, role by role, tensors in BlockSpec order.
  std::map<std::pair<int, Role>, int> next_tensor;
  for (size_t i = 0; i < sp.plan_.tensors.size(); ++i) {
    const memory::TensorEntry& e = sp.plan_.tensors[i];
    const int t = next_tensor[{e.block, e.role}]++;
    const TensorSpec& spec = layout.blocks[e.block].tensors[t];
    STRATA_CHECK(spec.name == e.name) << e.name << " vs " << spec.name;
    Group& g = sp.groups_[sp.index(e.block, e.role)];
    for (const memory::TensorSpan& s : sp.plan_.spans_of(i)) {
      if (g.pages.empty() || g.pages.back() != s.page) {
        STRATA_CHECK(g.pages.empty() || s.page == g.pages.back() + 1);
        g.pages.push_back(s.page);
        g.pieces.emplace_back();
      }
      g.pieces.back().push_back(Piece{s.page, s.page_offset_bytes,
                                      uint64_t(spec.offset) * 4 + s.tensor_offset_bytes, s.bytes,
                                      t});
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
