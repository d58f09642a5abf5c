#include "scheduler/optimizer_queue.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "core/kernels/adamw.h"

namespace strata::scheduler {

using memory::Access;
using memory::PageRef;
using memory::Role;

namespace {

// Page indices (of each of grad, m, v, param) the optimizer reads ahead from NVMe: at most 8,
// and at most 1/32 of the host pool's pages, so that the 4 x read-ahead frames stay within 1/8
// of the pool. A deeper read-ahead in a small pool evicts pages still needed before it is
// used: the demo (64-page pool) read 361 MiB from NVMe per step with 8 and 192 with 2, and ran
// 6% slower.
constexpr size_t kReadAheadMax = 8;
constexpr uint64_t kReadAheadPoolFraction = 32;

// Note [Update read-ahead]
// With clipping the updates are submitted once the norm is known, after backward, and the first
// update's NVMe reads used to start only then. In the cost configuration the host pool is full
// of dirty pages at that moment, so the first read also waited for a group write-back to make
// room: 12-29 ms before the first AdamW, with the next forward waiting behind it. So when
// compute reaches the step's last block backward, the driver calls read_ahead for the first
// update (from a host function on the compute stream): the reads and the write-backs they need
// overlap that block's backward. In traces the first update's stall is gone, and the next
// forward starts ~20 ms after the norm instead of 24-47.

std::string Label(const char* what, int block, size_t k) {
  return std::string(what) + " b" + std::to_string(block) + " p" + std::to_string(k);
}

}  // namespace

OptimizerQueue::OptimizerQueue(const ModelLayout& layout, const StatePages& pages, HostPages& host,
                               Transfers& transfers, Device& device, Timeline& timeline,
                               const AdamWSettings& settings)
    : layout_(layout),
      sp_(pages),
      host_(host),
      transfers_(transfers),
      device_(device),
      timeline_(timeline),
      settings_(settings) {
  const uint64_t pool_pages = host.manager().host_frames();
  read_ahead_ = std::clamp<size_t>(pool_pages / kReadAheadPoolFraction, 1, kReadAheadMax);
  refresh_ = device_.create_stream("refresh");
  arena_ = std::make_unique<tbb::task_arena>(settings.threads);
  queue_ = std::make_unique<SerialJobThread>("optimizer");
}

OptimizerQueue::~OptimizerQueue() {
  drain().ignore_error();
  queue_.reset();
  refresh_.reset();
}

std::shared_future<Status> OptimizerQueue::track(std::shared_future<Status> done) {
  jobs_.push_back(done);
  return done;
}

std::shared_future<Status> OptimizerQueue::submit_update(
    UpdateJob job, std::shared_ptr<std::vector<std::promise<Status>>> page_done) {
  auto promise = std::make_shared<std::promise<Status>>();
  queue_->submit([this, promise, page_done, job = std::move(job)] {
    size_t pages_done = 0;
    Status st = update_block(job, [&](size_t k) {
      (*page_done)[k].set_value(Status::Ok());
      pages_done = k + 1;
    });
    // The pages not reached (after an error) carry the error, so no load waits forever.
    for (size_t k = pages_done; k < page_done->size(); ++k) (*page_done)[k].set_value(st);
    if (job.refresh.done) {
      if (st.ok()) {
        job.refresh.done->set_value(RecordOn(device_, *refresh_));
      } else {
        job.refresh.done->set_value(st);
      }
    }
    promise->set_value(st);
  });
  return track(promise->get_future().share());
}

std::shared_future<Status> OptimizerQueue::submit_publish(int block, long step) {
  auto promise = std::make_shared<std::promise<Status>>();
  queue_->submit([this, promise, block, step] { promise->set_value(publish_block(block, step)); });
  return track(promise->get_future().share());
}

std::shared_future<Status> OptimizerQueue::enqueue(std::function<Status()> job) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::shared_future<Status> done = promise->get_future().share();
  // The jobs before it that have not been seen to succeed (take_finished_errors forgets only
  // those): a checkpoint after a failed update would record a half-updated step as complete.
  queue_->submit([promise, before = jobs_, job = std::move(job)] {
    for (const std::shared_future<Status>& b : before) {
      const Status st = b.get();  // ready: the queue runs its jobs in order
      if (!st.ok()) {
        promise->set_value(st.with_context("not run, an update before it failed"));
        return;
      }
    }
    promise->set_value(job());
  });
  return done;
}

void OptimizerQueue::read_ahead(int block, int next_block) {
  for (size_t k = 0; k < read_ahead_; ++k) prefetch_update_page(block, next_block, k);
}

Status OptimizerQueue::take_finished_errors() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++it;
      continue;
    }
    STRATA_RETURN_IF_ERROR(it->get().with_context("optimizer queue"));
    it = jobs_.erase(it);
  }
  return Status::Ok();
}

Status OptimizerQueue::drain() {
  queue_->drain();
  // Filled by the queue's thread: after its drain.
  Status first = refresh_->synchronize();
  for (const std::shared_future<Status>& job : jobs_) {
    Status st = job.get();
    if (first.ok() && !st.ok()) first = st.with_context("optimizer queue");
  }
  jobs_.clear();
  return first;
}

Status OptimizerQueue::refresh_page(const UpdateJob& job, size_t k) {
  const int block = job.block;
  if (k == 0 && job.refresh.after) refresh_->wait(*job.refresh.after);
  STRATA_ASSIGN_OR_RETURN(
      PageRef ref,
      host_.acquire(sp_.pages(block, Role::kParam)[k], Access::kRead, Acquirer::kOptimizer,
                    "refresh block " + std::to_string(block), job.step));
  return transfers_.upload_page(std::move(ref), block, Role::kParam, k, job.refresh.dst, *refresh_,
                               Queue::kRefresh, job.step);
}

// Copies the master pages of a block onto its parameter pages (same layout, whole pages). The
// overwrite waits for the loads still reading the parameter pages (their pins).
Status OptimizerQueue::publish_block(int block, long step) {
  const auto& pp = sp_.pages(block, Role::kParam);
  const auto& mp = sp_.pages(block, Role::kMaster);
  const std::string holder = "publish block " + std::to_string(block);
  for (size_t k = 0; k < pp.size(); ++k) {
    STRATA_ASSIGN_OR_RETURN(
        PageRef master, host_.acquire(mp[k], Access::kRead, Acquirer::kOptimizer, holder, step));
    STRATA_ASSIGN_OR_RETURN(PageRef param, host_.acquire(pp[k], Access::kOverwrite,
                                                         Acquirer::kOptimizer, holder, step));
    std::memcpy(param.data(), master.data(), sp_.page_bytes());
    master.release();
    STRATA_RETURN_IF_ERROR(host_.release(param));
  }
  return Status::Ok();
}

void OptimizerQueue::prefetch_update_page(int block, int next_block, size_t k) {
  if (!host_.has_nvme()) return;
  const Role param_role = settings_.delayed_update ? Role::kMaster : Role::kParam;
  const size_t n = sp_.pages(block, param_role).size();
  if (k >= n) {
    if (next_block < 0) return;
    k -= n;
    block = next_block;
    if (k >= sp_.pages(block, param_role).size()) return;
  }
  for (Role r : {Role::kGrad, Role::kAdamM, Role::kAdamV, param_role}) {
    host_.prefetch(sp_.pages(block, r)[k]);
  }
}

Status OptimizerQueue::update_block(const UpdateJob& job,
                                   const std::function<void(size_t)>& page_done) {
  const int block = job.block;
  // NVMe reads run read_ahead_ page indices ahead of the update, so that the disk queue stays
  // full while AdamW works (one ahead left the update waiting on every read); near the end of
  // the block they run into the next block's first pages, so the queue does not drain between
  // blocks.
  for (size_t k = 1; k < read_ahead_; ++k) prefetch_update_page(block, job.next_block, k);
  const size_t n = sp_.pages(block, Role::kParam).size();
  for (size_t k = 0; k < n; ++k) {
    prefetch_update_page(block, job.next_block, k + read_ahead_);
    STRATA_RETURN_IF_ERROR(update_page(job, k));
    if (job.refresh.dst != nullptr) STRATA_RETURN_IF_ERROR(refresh_page(job, k));
    page_done(k);
  }
  return Status::Ok();
}

// AdamW on page index k of the block: its gradient, moments and parameters (the master copy
// with --delayed-update) are acquired, updated piece by piece, and released.
Status OptimizerQueue::update_page(const UpdateJob& job, size_t k) {
  const int block = job.block;
  const auto& pp = sp_.pages(block, settings_.delayed_update ? Role::kMaster : Role::kParam);
  const auto& gp = sp_.pages(block, Role::kGrad);
  const auto& mp = sp_.pages(block, Role::kAdamM);
  const auto& vp = sp_.pages(block, Role::kAdamV);
  const std::string holder = "adamw block " + std::to_string(block);
  auto acquire = [&](memory::PageId page, Access access) {
    return host_.acquire(page, access, Acquirer::kOptimizer, holder, job.step);
  };
  const int64_t t0 = timeline_.now_ns();
  job.grads[k]->synchronize();  // this page's gradient is on the host (copy errors: Drain)
  // A host-home page gives up its pin just before it is taken for write (HostPages::acquire), so
  // that making room for the others never evicts it.
  STRATA_ASSIGN_OR_RETURN(PageRef g, acquire(gp[k], Access::kRead));
  STRATA_ASSIGN_OR_RETURN(PageRef m, acquire(mp[k], Access::kWrite));
  STRATA_ASSIGN_OR_RETURN(PageRef v, acquire(vp[k], Access::kWrite));
  STRATA_ASSIGN_OR_RETURN(PageRef p, acquire(pp[k], Access::kWrite));
  const int64_t t1 = timeline_.now_ns();
  timeline_.add(Slice{Queue::kOptimizerIo, Label("adamw pages", block, k), t0, t1,
                      4 * sp_.page_bytes(), job.step});
  kernels::AdamWParams hp;
  hp.lr = job.lr;
  hp.beta1 = settings_.beta1;
  hp.beta2 = settings_.beta2;
  hp.eps = settings_.eps;
  hp.step = job.step + 1;
  const BlockSpec& spec = layout_.blocks[block];
  uint64_t bytes = 0;
  arena_->execute([&] {
    for (const Piece& piece : sp_.pieces(block, Role::kParam, k)) {
      hp.weight_decay = spec.tensors[piece.tensor].decay ? settings_.weight_decay : 0.0f;
      auto at = [&](const PageRef& r) {
        return reinterpret_cast<float*>(static_cast<char*>(r.data()) + piece.page_offset);
      };
      kernels::adamw_update(at(p), at(g), at(m), at(v), long(piece.bytes / 4), hp, job.coef);
      bytes += piece.bytes;
    }
  });
  timeline_.add(
      Slice{Queue::kOptimizer, Label("adamw", block, k), t1, timeline_.now_ns(), bytes, job.step});
  g.release();
  // The gradient is dead until the next backward overwrites it: never write it back.
  if (job.discard_grads) STRATA_RETURN_IF_ERROR(host_.manager().discard(gp[k]));
  for (PageRef* r : {&p, &m, &v}) STRATA_RETURN_IF_ERROR(host_.release(*r));
  // The moments are next needed by the next step's update of this page, after everything else:
  // when room is needed they go first, not the gradients still waiting for AdamW.
  STRATA_RETURN_IF_ERROR(host_.manager().demote(mp[k]));
  return host_.manager().demote(vp[k]);
}

}  // namespace strata::scheduler
