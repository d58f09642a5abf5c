// HostFramePool (internal to memory/): the one pinned host pool (the host budget), cut into page
// frames, with the set of pages resident in it and the waiting room of requests that need a
// frame.
//
// Frames are handed out from a free list, then carved from the pool until capacity_frames
// exist; a frame in use belongs to one page (or to a staged, discarded version) until put()
// returns it. in_use() counts frames taken and not yet returned, with its peak (the budget
// check that tests assert).
//
// Progress and waiting (Note [Progress and stalls] in memory_manager.cc): anything that could
// let a frame waiter proceed (a frame returned, a pin released, a commit done) calls wake(),
// which bumps progress() and notifies the waiters. progress_ and waiters_ are seq_cst: a waiter
// registers before it reads progress(), a waker bumps progress before it reads waiters_, so
// either the waker sees the waiter or the waiter sees the new progress (no lost wake-up, and no
// mutex on the release path when nobody waits).
// Threads: every method from any thread; mu_ guards the free list, the counters and the
// resident set and is never held while a page mutex is taken (lock order page -> pool).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/util/status.h"
#include "memory/memory_stats.h"
#include "memory/resident_set.h"
#include "storage/aligned_buffer.h"

namespace strata::memory::internal {

class HostFramePool {
 public:
  static Result<std::unique_ptr<HostFramePool>> Create(uint64_t capacity_frames,
                                                       uint64_t page_bytes, uint64_t num_pages);

  uint64_t capacity_frames() const { return capacity_frames_; }
  uint64_t page_bytes() const { return page_bytes_; }
  // The whole pool (registered with the Device and the NVMe tier's I/O engine).
  void* data() { return buffer_.data(); }
  uint64_t bytes() const { return buffer_.size(); }

  // A free frame, or nullptr when all capacity_frames are in use.
  void* take();
  void put(void* frame);
  void add_resident(PageId page);
  void remove_resident(PageId page);
  std::vector<PageId> resident_pages() const;
  TierStats stats() const;

  uint64_t progress() const { return progress_.load(); }
  void wake();
  // Sleeps until progress() differs from `seen` or `slice` passed.
  void wait_for_progress(uint64_t seen, std::chrono::milliseconds slice);

 private:
  HostFramePool(uint64_t capacity_frames, uint64_t page_bytes, uint64_t num_pages)
      : capacity_frames_(capacity_frames), page_bytes_(page_bytes), resident_(num_pages) {}

  const uint64_t capacity_frames_;
  const uint64_t page_bytes_;
  storage::AlignedBuffer buffer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<void*> free_;
  uint64_t carved_ = 0;  // frames carved from buffer_ so far
  CurrentPeak in_use_;   // frames
  ResidentSet resident_;
  std::atomic<uint64_t> progress_{0};
  std::atomic<int> waiters_{0};
};

}  // namespace strata::memory::internal
