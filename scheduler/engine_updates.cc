// The Engine's optimizer side (scheduler/engine.h): submitting a block's AdamW update to the
// optimizer queue, running it page by page over host pages (Note [Exact updates]), the uploads
// that follow it (Note [Eager refresh]), the NVMe read-ahead of the pages it needs, and the
// publishing of --delayed-update's master copy (Note [Delayed update]). Runs on the optimizer
// thread, except Submit*, MarkRefresh and ResolveRefresh (the driver).
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/kernels/adamw.h"
#include "scheduler/engine.h"

namespace strata::scheduler {

using memory::Access;
using memory::PageRef;
using memory::Role;
using memory::Tier;

void Engine::SubmitUpdate(UpdateJob job) {
  const int block = job.block;
  auto promise = std::make_shared<std::promise<Status>>();
  std::shared_future<Status> done = promise->get_future().share();
  jobs_.push_back(done);
  grads_read_[block] = done;
  const size_t n = sp_.pages(block, Role::kParam).size();
  auto page_promises = std::make_shared<std::vector<std::promise<Status>>>(n);
  if (!o_.delayed_update) {  // the parameter pages change: their next loads wait for them
    ++param_version_[block];
    updated_this_step_[block] = true;
    update_done_[block].clear();
    for (auto& p : *page_promises) update_done_[block].push_back(p.get_future().share());
    MarkRefresh(block, job);
  }
  optimizer_->submit([this, promise, page_promises, grads = grad_ready_[block], job] {
    size_t pages_done = 0;
    Status st = UpdateBlock(job, grads, [&](size_t k) {
      (*page_promises)[k].set_value(Status::Ok());
      pages_done = k + 1;
    });
    // The pages not reached (after an error) carry the error, so no load waits forever.
    for (size_t k = pages_done; k < page_promises->size(); ++k) (*page_promises)[k].set_value(st);
    if (job.refresh_done) {
      if (st.ok()) {
        job.refresh_done->set_value(Record(*refresh_));
      } else {
        job.refresh_done->set_value(st);
      }
    }
    promise->set_value(st);
  });
}

void Engine::MarkRefresh(int block, UpdateJob& job) {
  if (o_.plan.params != Home::kDevice && !program_.wait_for_norm) return;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.block != block || s.role != SlotRole::kParam || s.refresh.valid()) continue;
    job.refresh_dst = s.ptr;
    job.refresh_after = s.last_use;
    job.refresh_done = std::make_shared<std::promise<Result<std::shared_ptr<Event>>>>();
    s.refresh = job.refresh_done->get_future().share();
    s.version = param_version_[block];
    s.ready = nullptr;
    return;
  }
}

Status Engine::ResolveRefresh(int slot) {
  Slot& s = slots_[slot];
  if (!s.refresh.valid()) return Status::Ok();
  Result<std::shared_ptr<Event>> r = s.refresh.get();
  s.refresh = {};
  if (!r.ok()) {
    return r.status().WithContext("optimizer update of block " + std::to_string(s.block));
  }
  s.ready = *r;
  s.last_use = *r;  // the refresh waited for the slot's previous last use
  return Status::Ok();
}

Status Engine::RefreshPage(const UpdateJob& job, size_t k) {
  const int block = job.block;
  if (k == 0 && job.refresh_after) refresh_->wait(*job.refresh_after);
  memory::AcquireOptions ao;
  ao.holder = "refresh block " + std::to_string(block);
  STRATA_ASSIGN_OR_RETURN(
      PageRef ref, mm_.acquire_sync(sp_.pages(block, Role::kParam)[k], Access::kRead, ao));
  return UploadPage(std::move(ref), block, Role::kParam, k, job.refresh_dst, *refresh_,
                    Queue::kRefresh, job.step);
}

void Engine::SubmitPublish(int block) {
  ++param_version_[block];
  auto promise = std::make_shared<std::promise<Status>>();
  std::shared_future<Status> done = promise->get_future().share();
  update_done_[block].assign(sp_.pages(block, Role::kParam).size(), done);
  jobs_.push_back(done);
  optimizer_->submit([this, promise, block] { promise->set_value(PublishBlock(block)); });
}

// Copies the master pages of a block onto its parameter pages (same layout, whole pages). The
// overwrite waits for the loads still reading the parameter pages (their pins).
Status Engine::PublishBlock(int block) {
  const auto& pp = sp_.pages(block, Role::kParam);
  const auto& mp = sp_.pages(block, Role::kMaster);
  memory::AcquireOptions ao;
  ao.holder = "publish block " + std::to_string(block);
  for (size_t k = 0; k < pp.size(); ++k) {
    STRATA_ASSIGN_OR_RETURN(PageRef master,
                            mm_.acquire_sync(mp[k], Access::kRead, ao));
    Unpin(pp[k]);
    STRATA_ASSIGN_OR_RETURN(PageRef param,
                            mm_.acquire_sync(pp[k], Access::kOverwrite, ao));
    std::memcpy(param.data(), master.data(), sp_.page_bytes());
    param.release();
    master.release();
    STRATA_RETURN_IF_ERROR(Repin(pp[k]));
  }
  return Status::Ok();
}

void Engine::PrefetchUpdatePage(int block, int next_block, size_t k) {
  if (mm_.options().nvme == nullptr) return;
  const Role param_role = o_.delayed_update ? Role::kMaster : Role::kParam;
  const size_t n = sp_.pages(block, param_role).size();
  if (k >= n) {
    if (next_block < 0) return;
    k -= n;
    block = next_block;
    if (k >= sp_.pages(block, param_role).size()) return;
  }
  for (Role r : {Role::kGrad, Role::kAdamM, Role::kAdamV, param_role}) {
    mm_.prefetch(sp_.pages(block, r)[k]);
  }
}

Status Engine::UpdateBlock(const UpdateJob& job, const std::vector<std::shared_ptr<Event>>& grads,
                           const std::function<void(size_t)>& page_done) {
  const int block = job.block;
  kernels::AdamWParams hp;
  hp.lr = job.lr;
  hp.beta1 = o_.beta1;
  hp.beta2 = o_.beta2;
  hp.eps = o_.eps;
  hp.step = job.step + 1;
  const BlockSpec& spec = layout_.blocks[block];
  // With --delayed-update AdamW works on the master copy (Note [Delayed update]).
  const auto& pp = sp_.pages(block, o_.delayed_update ? Role::kMaster : Role::kParam);
  const auto& gp = sp_.pages(block, Role::kGrad);
  const auto& mp = sp_.pages(block, Role::kAdamM);
  const auto& vp = sp_.pages(block, Role::kAdamV);
  memory::AcquireOptions ao;
  ao.holder = "adamw block " + std::to_string(block);
  // NVMe reads run optimizer_read_ahead_ page indices ahead of the update, so that the disk queue
  // stays full while AdamW works (one ahead left the update waiting on every read); near the
  // end of the block they run into the next block's first pages, so the queue does not drain
  // between blocks.
  for (size_t k = 1; k < optimizer_read_ahead_; ++k) {
    PrefetchUpdatePage(block, job.next_block, k);
  }
  for (size_t k = 0; k < pp.size(); ++k) {
    PrefetchUpdatePage(block, job.next_block, k + optimizer_read_ahead_);
    const int64_t t0 = timeline_.now_ns();
    grads[k]->synchronize();  // this page's gradient is on the host (copy errors: Drain)
    // Each host-home page is unpinned just before it is taken for write, so that making room
    // for the others never evicts it.
    STRATA_ASSIGN_OR_RETURN(PageRef g, mm_.acquire_sync(gp[k], Access::kRead, ao));
    Unpin(mp[k]);
    STRATA_ASSIGN_OR_RETURN(PageRef m, mm_.acquire_sync(mp[k], Access::kWrite, ao));
    Unpin(vp[k]);
    STRATA_ASSIGN_OR_RETURN(PageRef v, mm_.acquire_sync(vp[k], Access::kWrite, ao));
    Unpin(pp[k]);
    STRATA_ASSIGN_OR_RETURN(PageRef p, mm_.acquire_sync(pp[k], Access::kWrite, ao));
    const int64_t t1 = timeline_.now_ns();
    timeline_.add(Slice{Queue::kOptimizerIo,
                        "adamw pages b" + std::to_string(block) + " p" + std::to_string(k), t0, t1,
                        4 * sp_.page_bytes(), job.step});
    uint64_t bytes = 0;
    optimizer_arena_->execute([&] {
      for (const Piece& piece : sp_.pieces(block, Role::kParam, k)) {
        hp.weight_decay = spec.tensors[piece.tensor].decay ? o_.weight_decay : 0.0f;
        auto at = [&](const PageRef& r) {
          return reinterpret_cast<float*>(static_cast<char*>(r.data()) + piece.page_offset);
        };
        kernels::adamw_update(at(p), at(g), at(m), at(v), long(piece.bytes / 4), hp, job.coef);
        bytes += piece.bytes;
      }
    });
    timeline_.add(Slice{Queue::kOptimizer,
                        "adamw b" + std::to_string(block) + " p" + std::to_string(k), t1,
                        timeline_.now_ns(), bytes, job.step});
    p.release();
    m.release();
    v.release();
    g.release();
    // The gradient is dead until the next backward overwrites it: never write it back.
    if (job.discard_grads) STRATA_RETURN_IF_ERROR(mm_.discard(gp[k]));
    STRATA_RETURN_IF_ERROR(Repin(pp[k]));
    STRATA_RETURN_IF_ERROR(Repin(mp[k]));
    STRATA_RETURN_IF_ERROR(Repin(vp[k]));
    // The moments are next needed by the next step's update of this page, after everything
    // else: when room is needed they go first, not the gradients still waiting for AdamW.
    STRATA_RETURN_IF_ERROR(mm_.demote(mp[k]));
    STRATA_RETURN_IF_ERROR(mm_.demote(vp[k]));
    if (job.refresh_dst != nullptr) STRATA_RETURN_IF_ERROR(RefreshPage(job, k));
    page_done(k);
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
