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
    case Role::kOther:
      return "other";
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

bool IsValidPageSize(uint64_t page_bytes) {
  return page_bytes >= kMinPageBytes && page_bytes % kMinPageBytes == 0;
}

namespace {

// InvalidArgument naming the bad option or tensor. The words are memory/'s own: the caller
// knows which flag, if any, set the page size.
Status CheckPlanInput(std::span<const TensorEntry> tensors, const PagePlanOptions& options) {
  const uint64_t page = options.page_bytes;
  if (!IsValidPageSize(page)) {
    return Status::InvalidArgument("page size " + std::to_string(page) +
                                   " bytes is not a multiple of 4 KiB (e.g. 64 KiB, "
                                   "16 MiB)");
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
  return Status::Ok();
}

// The tensor indices in layout order: by (block, role), input order inside a group.
std::vector<size_t> LayoutOrder(std::span<const TensorEntry> tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_tuple(tensors[a].block, int(tensors[a].role)) <
           std::make_tuple(tensors[b].block, int(tensors[b].role));
  });
  return order;
}

// Lays tensors out page by page (Note [Page packing]); one Packer per plan.
class Packer {
 public:
  explicit Packer(PagePlan& plan)
      : plan_(plan),
        page_(plan.options.page_bytes),
        align_(plan.options.tensor_align_bytes == 0 ? 1 : plan.options.tensor_align_bytes) {}

  // Places tensor `idx`, the next one in layout order.
  void place(size_t idx) {
    const TensorEntry& t = plan_.tensors[idx];
    const uint64_t bytes = uint64_t(t.numel) * plan_.options.elem_bytes;
    const bool new_group = !have_group_ || t.block != group_block_ || t.role != group_role_;
    if (new_group) {
      have_group_ = true;
      group_block_ = t.block;
      group_role_ = t.role;
      new_page(t);
    } else {
      offset_ = (offset_ + align_ - 1) / align_ * align_;
      // A tensor that fits in a page never straddles one.
      if (offset_ >= page_ || (bytes <= page_ && offset_ + bytes > page_)) new_page(t);
    }
    TensorPlacement& placement = plan_.placements[idx];
    placement.first_span = plan_.spans.size();
    placement.bytes = bytes;
    uint64_t done = 0;
    while (done < bytes) {
      if (offset_ == page_) new_page(t);
      const uint64_t piece = std::min(bytes - done, page_ - offset_);
      const PageId id = plan_.pages.size() - 1;
      plan_.spans.push_back(TensorSpan{id, offset_, done, piece});
      plan_.pages[id].used_bytes += piece;
      offset_ += piece;
      done += piece;
    }
    placement.span_count = plan_.spans.size() - placement.first_span;
  }

 private:
  void new_page(const TensorEntry& t) {
    plan_.pages.push_back(PageInfo{t.block, t.role, 0});
    offset_ = 0;
  }

  PagePlan& plan_;
  const uint64_t page_;
  const uint64_t align_;
  bool have_group_ = false;
  int group_block_ = 0;
  Role group_role_ = Role::kParam;
  uint64_t offset_ = 0;  // bytes used in the current (last) page
};

}  // namespace

Result<PagePlan> MakePagePlan(std::span<const TensorEntry> tensors,
                              const PagePlanOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckPlanInput(tensors, options));
  PagePlan plan;
  plan.options = options;
  plan.tensors.assign(tensors.begin(), tensors.end());
  plan.placements.resize(tensors.size());
  Packer packer(plan);
  for (size_t idx : LayoutOrder(tensors)) packer.place(idx);
  return plan;
}

}  // namespace strata::memory
