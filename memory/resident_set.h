// ResidentSet (internal to memory/): the pages with a copy in a pool, with O(1) insert and
// erase, stored contiguously because eviction copies the whole set for every frame it takes
// (walking an unordered_set's nodes was half the cost of an eviction in a 20k-page pool).
// Inserting a member or erasing a non-member does nothing. Not thread-safe: its pool's mutex
// guards it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/check.h"
#include "memory/page_plan.h"

namespace strata::memory::internal {

class ResidentSet {
 public:
  explicit ResidentSet(uint64_t num_pages) {
    STRATA_CHECK(num_pages < kAbsent) << num_pages << " pages";
    pos_.assign(num_pages, kAbsent);
  }
  void insert(PageId p) {
    if (pos_[p] != kAbsent) return;
    pos_[p] = uint32_t(pages_.size());
    pages_.push_back(p);
  }
  void erase(PageId p) {
    const uint32_t i = pos_[p];
    if (i == kAbsent) return;
    const PageId last = pages_.back();
    pages_[i] = last;
    pos_[last] = i;
    pages_.pop_back();
    pos_[p] = kAbsent;
  }
  size_t size() const { return pages_.size(); }
  const std::vector<PageId>& pages() const { return pages_; }

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  std::vector<PageId> pages_;
  std::vector<uint32_t> pos_;  // index in pages_, per page id
};

}  // namespace strata::memory::internal
