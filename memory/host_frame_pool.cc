#include "memory/host_frame_pool.h"

namespace strata::memory::internal {

Result<std::unique_ptr<HostFramePool>> HostFramePool::Create(uint64_t capacity_frames,
                                                             uint64_t page_bytes,
                                                             uint64_t num_pages) {
  std::unique_ptr<HostFramePool> pool(new HostFramePool(capacity_frames, page_bytes, num_pages));
  STRATA_ASSIGN_OR_RETURN(pool->buffer_,
                          storage::AlignedBuffer::Allocate(capacity_frames * page_bytes));
  return pool;
}

void* HostFramePool::take() {
  std::lock_guard lock(mu_);
  void* f = nullptr;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
  } else if (carved_ < capacity_frames_) {
    f = buffer_.data() + carved_ * page_bytes_;
    ++carved_;
  } else {
    return nullptr;
  }
  in_use_.add(1);
  return f;
}

void HostFramePool::put(void* frame) {
  {
    std::lock_guard lock(mu_);
    free_.push_back(frame);
    in_use_.sub(1);
  }
  wake();
}

void HostFramePool::add_resident(PageId page) {
  std::lock_guard lock(mu_);
  resident_.insert(page);
}

void HostFramePool::remove_resident(PageId page) {
  std::lock_guard lock(mu_);
  resident_.erase(page);
}

std::vector<PageId> HostFramePool::resident_pages() const {
  std::lock_guard lock(mu_);
  return resident_.pages();
}

TierStats HostFramePool::stats() const {
  std::lock_guard lock(mu_);
  TierStats s;
  s.capacity_bytes = capacity_frames_ * page_bytes_;
  s.current_bytes = in_use_.current() * page_bytes_;
  s.peak_bytes = in_use_.peak() * page_bytes_;
  s.resident_pages = resident_.size();
  return s;
}

void HostFramePool::wake() {
  progress_.fetch_add(1);
  if (waiters_.load() > 0) {
    { std::lock_guard lock(mu_); }
    cv_.notify_all();
  }
}

void HostFramePool::wait_for_progress(uint64_t seen, std::chrono::milliseconds slice) {
  waiters_.fetch_add(1);
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, slice, [&] { return progress_.load() != seen; });
  }
  waiters_.fetch_sub(1);
}

}  // namespace strata::memory::internal
