// The Engine's hand-over of blocks to the optimizer queue (driver side): the per-block
// bookkeeping that orders later loads after an update (Note [Exact updates]), the slots marked
// for refresh (Note [Eager refresh]), the read-ahead of the first update (Note [Update
// read-ahead]), --delayed-update's publishing, and learning the host tier's access plan
// (Note [Host access plan]).
#include <future>
#include <memory>
#include <vector>

#include "scheduler/engine.h"

namespace strata::scheduler {

using memory::Role;

void Engine::submit_update(UpdateJob job) {
  BlockState& bs = blocks_[job.block];
  const size_t n = sp_.pages(job.block, Role::kParam).size();
  auto page_done = std::make_shared<std::vector<std::promise<Status>>>(n);
  if (!o_.delayed_update) {  // the parameter pages change: their next loads wait for them
    ++bs.param_version;
    bs.updated_this_step = true;
    bs.update_done.clear();
    for (auto& p : *page_done) bs.update_done.push_back(p.get_future().share());
    // Eager refresh applies where the refreshed slot is next used before any other block needs
    // it: parameters on the device, or clipping (updates in forward order after backward).
    // A sharded block's slot is gathered anew at its next load instead (Note [Shards]).
    if ((o_.plan.params == Home::kDevice || program_.wait_for_norm) &&
        !ops_->sharded(job.block)) {
      job.refresh = slots_.mark_refresh(job.block, bs.param_version);
    }
  }
  job.grads = bs.grad_ready;
  const long step = job.step;
  bs.grads_read = optimizer_->submit_update(std::move(job), page_done);
  if (step == host_.recorded_step()) recorded_jobs_.push_back(bs.grads_read);
}

void Engine::submit_publish(int block, long step) {
  BlockState& bs = blocks_[block];
  ++bs.param_version;
  std::shared_future<Status> done = optimizer_->submit_publish(block, step);
  bs.update_done.assign(sp_.pages(block, Role::kParam).size(), done);
  if (step == host_.recorded_step()) recorded_jobs_.push_back(done);
}

// Note [Update read-ahead] (optimizer_queue.cc): runs when compute reaches the step's last block
// backward, about one block before the norm.
void Engine::read_ahead_first_update() {
  const std::vector<int>& order = program_.ops.back().updates;
  if (order.empty()) return;
  const int first = order[0], next = order.size() > 1 ? order[1] : -1;
  compute_->launch([q = optimizer_.get(), first, next] { q->read_ahead(first, next); });
}

// Note [Host access plan]: the second run_step call records its step's acquires; two calls later
// the recorded updates have finished (the step after the recorded one waited for them, but with
// --delayed-update: hence the wait), and the plan is set.
void Engine::learn_host_plan(long step) {
  if (!o_.host_access_plan) return;
  if (steps_run_ == 1) host_.record(step);
  if (steps_run_ != 3) return;
  for (const std::shared_future<Status>& job : recorded_jobs_) job.wait();
  recorded_jobs_.clear();
  std::vector<memory::PlannedAccess> plan = host_.take_plan();
  if (!plan.empty()) host_.manager().set_access_plan(std::move(plan));
}

}  // namespace strata::scheduler
