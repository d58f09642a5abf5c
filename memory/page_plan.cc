#include "memory/page_plan.h"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace strata::memory {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kParam:
      return "param";
    case Role::kGrad:
      return "grad";
    case Role::kAdamM:
      return "adam_m";
    case Role::kAdamV:
      return "adam_v";
    case Role::kMaster:
      return "master";
  }
  return "unknown";
}

uint64_t PagePlan::tensor_bytes() const {
  uint64_t total = 0;
  for (const TensorPlacement& p : placements) total += p.bytes;
  return total;
}

double PagePlan::waste_fraction() const {
  return total_bytes() == 0 ? 0.0 : double(padding_bytes()) / double(total_bytes());
}

std::span<const TensorSpan> PagePlan::spans_of(size_t tensor) const {
  STRATA_CHECK(tensor < placements.size()) << "tensor index " << tensor << " out of range";
  const TensorPlacement& p = placements[tensor];
  return std::span<const TensorSpan>(spans).subspan(p.first_span, p.span_count);
}

std::vector<PageId> PagePlan::pages_of(int block, Role role) const {
  std::vector<PageId> out;
  for (PageId id = 0; id < pages.size(); ++id) {
    if (pages[id].block == block && pages[id].role == role) out.push_back(id);
  }
  return out;
}

Result<size_t> PagePlan::find(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return i;
  }
  return Status::NotFound("page plan: no tensor named '" + name + "'");
}

Result<PagePlan> MakePagePlan(std::span<const TensorEntry> tensors,
                              const PagePlanOptions& options) {
  const uint64_t page = options.page_bytes;
  if (page < kMinPageBytes || (page & (page - 1)) != 0) {
    return Status::InvalidArgument("page size " + std::to_string(page) +
                                   " bytes is not a power of two of at least 4 KiB; use e.g. "
                                   "--page-size 16M");
  }
  if (options.elem_bytes == 0) return Status::InvalidArgument("page plan: elem_bytes is 0");
  const uint64_t align = options.tensor_align_bytes == 0 ? 1 : options.tensor_align_bytes;
  if (page % align != 0) {
    return Status::InvalidArgument("page plan: tensor alignment " + std::to_string(align) +
                                   " does not divide the page size " + std::to_string(page));
  }
  for (const TensorEntry& t : tensors) {
    if (t.numel <= 0 || t.block < 0) {
      return Status::InvalidArgument("page plan: tensor '" + t.name + "' (block " +
                                     std::to_string(t.block) + ") has numel " +
                                     std::to_string(t.numel) +
                                     "; numel must be positive and "
                                     "the block non-negative");
    }
  }

  PagePlan plan;
  plan.options = options;
  plan.tensors.assign(tensors.begin(), tensors.end());
  plan.placements.resize(tensors.size());

  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_tuple(tensors[a].block, int(tensors[a].role)) <
           std::make_tuple(tensors[b].block, int(tensors[b].role));
  });

  bool have_group = false;
  int group_block = 0;
  Role group_role = Role::kParam;
  uint64_t offset = 0;  // bytes used in the current (last) page
  for (size_t idx : order) {
    const TensorEntry& t = tensors[idx];
    const uint64_t bytes = uint64_t(t.numel) * options.elem_bytes;
    const bool new_group = !have_group || t.block != group_block || t.role != group_role;
    if (new_group) {
      have_group = true;
      group_block = t.block;
      group_role = t.role;
      plan.pages.push_back(PageInfo{t.block, t.role, 0});
      offset = 0;
    } else {
      offset = (offset + align - 1) / align * align;
      if (offset >= page || (bytes <= page && offset + bytes > page)) {
        plan.pages.push_back(PageInfo{t.block, t.role, 0});
        offset = 0;
      }
    }
    TensorPlacement& placement = plan.placements[idx];
    placement.first_span = plan.spans.size();
    placement.bytes = bytes;
    uint64_t done = 0;
    while (done < bytes) {
      if (offset == page) {
        plan.pages.push_back(PageInfo{t.block, t.role, 0});
        offset = 0;
      }
      const uint64_t piece = std::min(bytes - done, page - offset);
      const PageId id = plan.pages.size() - 1;
      plan.spans.push_back(TensorSpan{id, offset, done, piece});
      plan.pages[id].used_bytes += piece;
      offset += piece;
      done += piece;
    }
    placement.span_count = plan.spans.size() - placement.first_span;
  }
  return plan;
}

}  // namespace strata::memory
