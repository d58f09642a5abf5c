// Layout: the registered tensors, the optimizer's pairs, and where each tensor lives in pages.
//
// Tensors are registered (name, bytes, dtype, role, group) until the layout is sealed; sealing
// lays them into pages with memory::MakePagePlan: one page class per (group, role), tensors in
// registration order, 256-byte aligned, never straddling a page (Note [Page packing] in
// memory/page_plan.h: a tensor that fits in a page stays in one, so its pointer is usable in
// place; a tensor larger than a page is refused at registration).
//
// Note [Update units]
// The optimizer updates pairs whose (parameter page, gradient page, first-moment page,
// second-moment page) are the same together, holding those four pages at once. An acquire of
// any page that an unfinished unit writes or reads waits for it, so a unit never waits on the
// embedder and the embedder never sees a half-updated page.
//
// Threads: not thread-safe; the Runtime guards it (registration) and reads it only after
// sealing (immutable then).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>
#include "core/util/status.h"
#include "memory/page_plan.h"

namespace strata::embed {

struct TensorInfo {
  std::string name;
  uint64_t bytes = 0;
  int dtype = 0;  // strata_dtype
  int role = 0;   // strata_role
  std::string group;
  // After sealing:
  memory::PageId page = 0;
  uint64_t offset = 0;  // inside the page
};

struct Pair {
  size_t param = 0, grad = 0, exp_avg = 0, exp_avg_sq = 0;  // tensor indices
  float weight_decay = 0.0f;
};

struct UpdateUnit {
  std::array<memory::PageId, 4> pages{};  // param, grad, exp_avg, exp_avg_sq
  std::vector<size_t> pairs;              // indices into pairs()
};

class Layout {
 public:
  explicit Layout(uint64_t page_bytes) : page_bytes_(page_bytes) {}

  Result<size_t> add(TensorInfo info);
  Status add_pair(size_t param, size_t grad, float weight_decay);
  Result<size_t> find(const std::string& name) const;

  // Lays every tensor into pages; afterwards nothing can be added.
  Status seal();
  bool sealed() const { return sealed_; }

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& tensor(size_t i) const { return tensors_[i]; }
  const std::vector<Pair>& pairs() const { return pairs_; }
  const std::vector<UpdateUnit>& units() const { return units_; }
  uint64_t page_bytes() const { return page_bytes_; }
  uint64_t num_pages() const { return num_pages_; }
  // The tensors in `page`, in layout order.
  const std::vector<size_t>& tensors_in(memory::PageId page) const { return page_tensors_[page]; }
  // Indices of the units that touch `page`.
  const std::vector<size_t>& units_of(memory::PageId page) const { return page_units_[page]; }
  // Whether `tensor` is the parameter or gradient of a pair.
  bool in_pair(size_t tensor) const;

 private:
  Status check_pair_tensor(size_t i, int role, const char* what) const;
  void build_units();

  uint64_t page_bytes_;
  bool sealed_ = false;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
  std::unordered_map<std::string, int> group_ids_;
  std::vector<int> group_of_;  // per tensor
  std::vector<Pair> pairs_;
  std::vector<int> pair_member_;  // per tensor: 1 when the param or grad of a pair
  std::vector<UpdateUnit> units_;
  uint64_t num_pages_ = 0;
  std::vector<std::vector<size_t>> page_tensors_;
  std::vector<std::vector<size_t>> page_units_;
};

}  // namespace strata::embed
