// PagePlan: where every model-state tensor lives in fixed-size pages. Pure functions, no device.
//
// Input is a generic list of tensors, each (block, role, name, numel); the model is not known
// here (LayoutTensorEntries in memory/page_plan_layout.h turns a model's layout into such a list).
//
// Note [Page packing]
// Tensors are grouped by (block, role); groups are laid out in ascending (block, role) order
// and, inside a group, tensors keep their input order. A page holds tensors of exactly one
// group. Each tensor starts at a multiple of tensor_align_bytes inside its group's stream of
// bytes. A tensor no larger than a page never straddles a page boundary (when it does not fit
// in what is left of the current page, a new page starts and the rest is padding), so a kernel
// can use it in place. A tensor larger than a page starts where the previous one ended and
// spans consecutive pages. The last page of a group is padded to the page size. The plan
// reports that padding as waste.
//
// Contract: MakePagePlan is a pure function of its inputs; a bad input (page size not a power
// of two or below 4 KiB, a tensor with numel <= 0, a negative block, an element size of 0)
// is InvalidArgument naming the tensor or option. Page ids are dense: 0 .. pages.size()-1 in
// layout order, so the pages of one (block, role) are consecutive.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/util/sizes.h"
#include "core/util/status.h"

namespace strata::memory {

using PageId = uint64_t;

// What a page holds. Values are stable (they appear in logs and on disk).
// kOther: an embedder's tensors that are none of these (include/strata.h, STRATA_ROLE_OTHER).
enum class Role : uint8_t { kParam = 0, kGrad = 1, kAdamM = 2, kAdamV = 3, kMaster = 4, kOther = 5 };
inline constexpr int kNumRoles = 6;
// "param", "grad", "adam_m", "adam_v", "master", "other".
const char* RoleName(Role role);

inline constexpr uint64_t kDefaultPageBytes = 16 * kMiB;
inline constexpr uint64_t kMinPageBytes = 4 * kKiB;

struct TensorEntry {
  int block = 0;
  Role role = Role::kParam;
  std::string name;
  int64_t numel = 0;
};

struct PagePlanOptions {
  uint64_t page_bytes = kDefaultPageBytes;  // IsValidPageSize: a multiple of 4 KiB
  uint32_t elem_bytes = 4;                  // fp32
  uint64_t tensor_align_bytes = 64;         // start of every tensor inside its group
};

// One contiguous piece of a tensor inside one page.
struct TensorSpan {
  PageId page = 0;
  uint64_t page_offset_bytes = 0;    // where the piece starts inside the page
  uint64_t tensor_offset_bytes = 0;  // where the piece starts inside the tensor
  uint64_t bytes = 0;
};

struct TensorPlacement {
  size_t first_span = 0;  // index into PagePlan::spans
  size_t span_count = 0;  // 1 unless the tensor is larger than what was left of its page
  uint64_t bytes = 0;
};

struct PageInfo {
  int block = 0;
  Role role = Role::kParam;
  uint64_t used_bytes = 0;  // bytes of tensor data (the rest of the page is padding)
};

struct PagePlan {
  PagePlanOptions options;
  std::vector<TensorEntry> tensors;         // as given
  std::vector<TensorPlacement> placements;  // one per tensor, same index
  std::vector<TensorSpan> spans;
  std::vector<PageInfo> pages;  // index = PageId

  uint64_t num_pages() const { return pages.size(); }
  uint64_t tensor_bytes() const;  // sum of tensor bytes
  uint64_t total_bytes() const { return num_pages() * options.page_bytes; }
  uint64_t padding_bytes() const { return total_bytes() - tensor_bytes(); }
  double waste_fraction() const;  // padding / total, 0 for an empty plan

  std::span<const TensorSpan> spans_of(size_t tensor) const;
  // The pages of one (block, role), in order; empty when that group has no tensor.
  std::vector<PageId> pages_of(int block, Role role) const;
  // Index of the tensor named `name`, or NotFound.
  Result<size_t> find(const std::string& name) const;
};

Result<PagePlan> MakePagePlan(std::span<const TensorEntry> tensors,
                              const PagePlanOptions& options = {});

// A multiple of kMinPageBytes (4 KiB: the NVMe tier's O_DIRECT unit), at least kMinPageBytes.
// Not necessarily a power of two: a page a little larger than an embedder's largest tensor
// pads less than the next power of two (strata.torch chooses such sizes).
bool IsValidPageSize(uint64_t page_bytes);

}  // namespace strata::memory
