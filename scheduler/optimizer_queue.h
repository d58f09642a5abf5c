// OptimizerQueue: the optimizer side of the Engine. One host thread (a SerialJobThread) runs, in
// submission order, each block's AdamW update page by page over host pages (Note [Exact
// updates] in engine.h), the upload of each updated parameter page into its device slot on the
// `refresh` stream (Note [Eager refresh]), the NVMe read-ahead of the pages the next updates
// need (Note [Update read-ahead]), --delayed-update's publishing (Note [Delayed update]) and
// jobs such as checkpoints that must see one step's finished state.
//
// Threads: Submit*, Enqueue and Drain from the driver; the jobs run on the queue's thread.
// Borrowed objects must outlive the queue.
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "core/device/device.h"
#include "core/nn/model_layout.h"
#include "core/util/status.h"
#include "scheduler/host_pages.h"
#include "scheduler/serial_job_thread.h"
#include "scheduler/slot_cache.h"
#include "scheduler/state_pages.h"
#include "scheduler/trace.h"
#include "scheduler/transfers.h"

namespace strata::scheduler {

struct AdamWSettings {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
  bool delayed_update = false;  // update the master copy (Note [Delayed update])
  int threads = 1;              // the TBB arena of AdamW
};

struct UpdateJob {
  int block = 0;
  long step = 0;
  float lr = 0, coef = 1;
  bool discard_grads = true;   // drop the gradient pages once read (not when on_grads reads them)
  int next_block = -1;         // the block updated next, whose first pages are read ahead
  RefreshTarget refresh = {};  // the slot to refresh after each page (Note [Eager refresh])
  std::vector<std::shared_ptr<Event>> grads = {};  // per gradient page: on the host
};

class OptimizerQueue {
 public:
  OptimizerQueue(const ModelLayout& layout, const StatePages& pages, HostPages& host,
                 Transfers& transfers, Device& device, Timeline& timeline,
                 const AdamWSettings& settings);
  ~OptimizerQueue();  // drains

  // Queues the update; `page_done[k]` is fulfilled once page k's parameters are written (with
  // the update's error when it failed before). Returns the job's completion.
  std::shared_future<Status> submit_update(
      UpdateJob job, std::shared_ptr<std::vector<std::promise<Status>>> page_done);
  // Queues copying block's master pages onto its parameter pages (--delayed-update).
  std::shared_future<Status> submit_publish(int block, long step);
  // Runs `job` after every update submitted so far and before any later one, if they all
  // succeeded; otherwise `job` is not called and the result is the first of their errors.
  std::shared_future<Status> enqueue(std::function<Status()> job);
  // Starts reading ahead the first pages of `block`'s update (then next_block's).
  void read_ahead(int block, int next_block);
  // Errors of the jobs that finished (they are forgotten); waits for none.
  Status take_finished_errors();
  // Waits for every job and for the refresh uploads; the first error.
  Status drain();

 private:
  Status update_block(const UpdateJob& job, const std::function<void(size_t)>& page_done);
  Status update_page(const UpdateJob& job, size_t k);
  Status refresh_page(const UpdateJob& job, size_t k);
  Status publish_block(int block, long step);
  void prefetch_update_page(int block, int next_block, size_t k);
  std::shared_future<Status> track(std::shared_future<Status> done);

  const ModelLayout& layout_;
  const StatePages& sp_;
  HostPages& host_;
  Transfers& transfers_;
  Device& device_;
  Timeline& timeline_;
  const AdamWSettings settings_;
  size_t read_ahead_ = 1;            // page indices read ahead (Note [Update read-ahead])
  std::unique_ptr<Stream> refresh_;  // filled from the queue's thread only
  std::unique_ptr<tbb::task_arena> arena_;
  std::unique_ptr<SerialJobThread> queue_;
  std::vector<std::shared_future<Status>> jobs_;  // since the last Drain
};

}  // namespace strata::scheduler
