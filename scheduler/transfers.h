// Transfers: the copies between host pages and device slots, on the Device's h2d and d2h
// streams. Pages are the unit of host/NVMe movement but not a byte range of a block, so each
// tensor piece goes to its own offset (Note [Pieces, not pages, into slots] in state_pages.h).
// A host page is pinned only while its pieces are in flight: the pin is released by a callback
// on the copying stream.
//
// Streams: h2d (loads), d2h (gradients down) and d2h_first (block 0's gradient, ahead of the
// others: Note [Gradient order] in engine.h). The optimizer's uploads after an update run on its
// own refresh stream through upload_page (optimizer_queue.h).
//
// Threads: Load and copy_grad_down from the driver; upload_page from any thread, for its stream.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/util/status.h"
#include "scheduler/host_pages.h"
#include "scheduler/split_plan.h"
#include "scheduler/state_pages.h"
#include "scheduler/trace.h"

namespace strata::scheduler {

// An Event recorded on `stream` now.
std::shared_ptr<Event> RecordOn(Device& device, Stream& stream);
// Enqueues `enqueue`'s work on `stream` between two host callbacks that time it as one slice of
// `queue` on the timeline.
void EnqueueTimed(Timeline& timeline, Stream& stream, Queue queue, std::string name, uint64_t bytes,
                  long step, const std::function<void()>& enqueue);

class Transfers {
 public:
  // `split`: where a split block's parameter pieces go in its slot (Note [Split operators] in
  // split_plan.h); nullptr: every piece at its block offset.
  Transfers(const StatePages& pages, HostPages& host, Device& device, Timeline& timeline,
            const SplitPlan* split = nullptr);
  ~Transfers();  // runs what is queued (page releases) first

  Stream& h2d() { return *h2d_; }

  // Enqueues the copies of page k of (block, role)'s pieces into the block-layout buffer `dst`
  // on `stream` (a `queue` slice); `ref` pins the host page until they ran.
  Status upload_page(memory::PageRef ref, int block, memory::Role role, size_t k, float* dst,
                    Stream& stream, Queue queue, long step);
  // Loads (block, role) into `dst` on the h2d stream once `after` (the slot's last use)
  // completed. Page k is acquired only after wait_pages[k] (its update), when there is one.
  // Returns the Event after the last copy.
  Result<std::shared_ptr<Event>> load(float* dst, int block, memory::Role role,
                                      const std::shared_ptr<Event>& after,
                                      const std::vector<std::shared_future<Status>>& wait_pages,
                                      long step);
  // Copies the gradient in `src` down to the block's gradient pages once `after` completed.
  // Returns one Event per page: that page's gradient is on the host.
  Result<std::vector<std::shared_ptr<Event>>> copy_grad_down(const float* src, int block,
                                                           const std::shared_ptr<Event>& after,
                                                           long step);
  // Waits for every queued copy; the first error.
  Status synchronize();
  Status synchronize_d2h();

 private:
  // Byte offset in a slot of (block, role)'s piece `p`.
  uint64_t slot_offset(int block, memory::Role role, const Piece& p) const;

  const StatePages& sp_;
  const SplitPlan* split_;
  HostPages& host_;
  Device& device_;
  Timeline& timeline_;
  std::unique_ptr<Stream> h2d_, d2h_;
  std::unique_ptr<Stream> d2h_first_;  // block 0's gradient (Note [Gradient order])
};

}  // namespace strata::scheduler
