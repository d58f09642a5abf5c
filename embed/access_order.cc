#include "embed/access_order.h"

#include <algorithm>

namespace strata::embed {

AccessOrder::AccessOrder(const Layout* layout, uint64_t window_bytes)
    : layout_(layout),
      window_bytes_(window_bytes),
      positions_(layout->tensors().size()),
      prefetched_in_(layout->tensors().size(), 0) {}

bool AccessOrder::on_acquire(size_t tensor, std::vector<memory::PageId>& to_prefetch) {
  // An embedder that never steps would record forever; past the cap the iteration is not
  // learned (end_iteration keeps the order it had).
  if (recording_.size() < kMaxRecorded) recording_.push_back(tensor);
  const bool foreseen = prefetched_in_[tensor] == iteration_;
  prefetched_in_[tensor] = 0;  // a second acquire of it this iteration needs a new prefetch
  // Note [Per-page fallback]: follow an acquire found in the window; one found further ahead
  // moves the cursor only when the next acquire confirms the jump.
  const auto& pos = positions_[tensor];
  auto next = std::lower_bound(pos.begin(), pos.end(), uint32_t(cursor_));
  if (next != pos.end()) {
    const size_t p = *next;
    if (p < std::max(frontier_, cursor_ + 1) || (far_ != SIZE_MAX && p == far_ + 1)) {
      cursor_ = p + 1;
      far_ = SIZE_MAX;
    } else {
      far_ = p;
    }
  }
  // Note [Repeated acquires]: a tensor acquired again later in the iteration (a tied weight,
  // a parameter read in forward and again in backward) whose next position the window has
  // passed already gets no prefetch of its own: its pages are pinned now, and Belady keeps them
  // for a use that near, as it would keep prefetched ones. That next acquire is foreseen.
  auto again = std::lower_bound(pos.begin(), pos.end(), uint32_t(cursor_));
  if (again != pos.end() && *again < frontier_) prefetched_in_[tensor] = iteration_;
  extend_window(to_prefetch);
  return foreseen;
}

// The window counts pages, not tensor bytes: a prefetch loads a whole page. Consecutive entries
// in one page count once.
void AccessOrder::extend_window(std::vector<memory::PageId>& to_prefetch) {
  frontier_ = std::max(frontier_, cursor_);
  auto page_of = [&](size_t p) { return layout_->tensor(expected_[p]).page; };
  uint64_t ahead = 0;  // bytes of the pages already issued, from the cursor
  for (size_t p = cursor_; p < frontier_; ++p) {
    if (p == cursor_ || page_of(p) != page_of(p - 1)) ahead += layout_->page_bytes();
  }
  while (frontier_ < expected_.size() && ahead < window_bytes_) {
    const size_t p = frontier_++;
    if (p == cursor_ || page_of(p) != page_of(p - 1)) ahead += layout_->page_bytes();
    const size_t t = expected_[p];
    if (prefetched_in_[t] == iteration_) continue;
    prefetched_in_[t] = iteration_;
    const TensorInfo& info = layout_->tensor(t);
    ahead += (info.num_pages - 1) * layout_->page_bytes();
    for (uint64_t i = 0; i < info.num_pages; ++i) {
      const memory::PageId page = info.page + i;
      if (std::find(to_prefetch.begin(), to_prefetch.end(), page) == to_prefetch.end()) {
        to_prefetch.push_back(page);
      }
    }
  }
}

bool AccessOrder::end_iteration(std::vector<memory::PageId>& to_prefetch) {
  const bool changed = recording_.size() < kMaxRecorded && recording_ != expected_;
  if (changed) {
    expected_ = std::move(recording_);
    for (auto& p : positions_) p.clear();
    for (size_t i = 0; i < expected_.size(); ++i) positions_[expected_[i]].push_back(uint32_t(i));
  }
  recording_.clear();
  recording_.reserve(expected_.size());
  cursor_ = frontier_ = 0;
  far_ = SIZE_MAX;
  ++iteration_;
  extend_window(to_prefetch);
  return changed;
}

}  // namespace strata::embed
