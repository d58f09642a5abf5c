#include "scheduler/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/kernels/adamw.h"
#include "core/util/option.h"
#include "scheduler/data_parallel.h"
#include "scheduler/grad_norm.h"
#include "scheduler/model_ops.h"

namespace strata::scheduler {

using memory::PageId;
using memory::Role;

Engine::Engine(const EngineOptions& o)
    : o_(o),
      sp_(*o.pages),
      device_(*o.device),
      timeline_(*o.timeline),
      host_(*o.memory),
      buffers_(*o.device),
      slots_(program_, blocks_) {}

Engine::~Engine() {
  drain().ignore_error();
  host_.release_homes();
  // Members go in reverse order: the optimizer queue and the streams run what is still queued
  // (page releases) before the buffers they use are freed.
}

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  STRATA_CHECK(options.model && options.layout && options.pages && options.memory &&
               options.device && options.timeline);
  STRATA_CHECK(options.micro_rows > 0 && options.batch % options.micro_rows == 0);
  std::unique_ptr<Engine> e(new Engine(options));
  STRATA_RETURN_IF_ERROR(e->setup());
  return e;
}

Status Engine::setup() {
  program_ =
      o_.pipe != nullptr && o_.pipe->stages > 1
          ? BuildStageProgram(o_.model->shape().n_layer, o_.batch / o_.micro_rows, o_.grad_clip > 0,
                              o_.pipe->blocks, o_.pipe->steps)
          : BuildStepProgram(o_.model->shape().n_layer, o_.batch / o_.micro_rows, o_.grad_clip > 0,
                             o_.plan.order, o_.model->head_ties_embedding());
  blocks_.assign(o_.layout->num_blocks(), BlockState{});
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    for (const SlotUse& u : program_.ops[i].uses) {
      if (u.role == SlotRole::kParam) blocks_[u.block].last_param_use = i;
    }
    if (program_.ops[i].kind == OpKind::kBlockBwd) last_block_bwd_ = i;
  }
  STRATA_ASSIGN_OR_RETURN(ops_, ModelOps::Create({.model = o_.model,
                                                  .layout = o_.layout,
                                                  .device = &device_,
                                                  .plan = &o_.plan,
                                                  .batch = o_.batch,
                                                  .micro_rows = o_.micro_rows,
                                                  .seq = o_.seq,
                                                  .threads = o_.threads,
                                                  .skip_kernels = o_.skip_kernels,
                                                  .dtype = o_.dtype,
                                                  .lender = host_frame_lender(),
                                                  .comm = o_.comm,
                                                  .global_batch = o_.global_batch,
                                                  .shards = o_.shards,
                                                  .split = o_.split,
                                                  .slice_comm = o_.slice_comm,
                                                  .timeline = &timeline_,
                                                  .tp_comm = o_.tp_comm,
                                                  .pipe = o_.pipe}));
  for (uint64_t bytes : o_.plan.slot_sizes) {
    STRATA_ASSIGN_OR_RETURN(void* s, buffers_.alloc(bytes, "a block slot"));
    slots_.add(static_cast<float*>(s), bytes);
  }
  compute_ = device_.create_stream("compute");
  // The comm stream sums gradients over the data-parallel ranks and, in a pipeline, passes the
  // tied embedding's gradient between the first and the last stage (ModelOps::reduce_grad).
  if ((o_.comm != nullptr && o_.comm->size() > 1) || (o_.pipe != nullptr && o_.pipe->stages > 1)) {
    comm_ = device_.create_stream("comm");
  }
  transfers_ = std::make_unique<Transfers>(sp_, host_, device_, timeline_, o_.split);
  optimizer_ = std::make_unique<OptimizerQueue>(
      *o_.layout, sp_, host_, *transfers_, device_, timeline_,
      AdamWSettings{o_.beta1, o_.beta2, o_.eps, o_.weight_decay, o_.delayed_update, o_.threads});
  tokens_host_.resize(ops_->tokens_count());
  return pin_host_homes();
}

// Layer-major's boundary store borrows frames of the host pool (boundary_store.h).
FrameLender Engine::host_frame_lender() const {
  memory::MemoryManager* mm = o_.memory;
  return {.borrow = [mm] { return mm->borrow_frame(); },
          .give_back = [mm](void* frame) { mm->give_back_frame(frame); },
          .frame_bytes = mm->page_bytes()};
}

Status Engine::pin_host_homes() {
  std::vector<Role> roles;
  if (o_.plan.params == Home::kHost || o_.plan.params_host_pinned) roles.push_back(Role::kParam);
  if (o_.plan.optimizer == Home::kHost) {
    roles.push_back(Role::kAdamM);
    roles.push_back(Role::kAdamV);
    if (o_.delayed_update) roles.push_back(Role::kMaster);
  }
  std::vector<PageId> homes;
  for (Role r : roles) {
    for (int b = 0; b < o_.layout->num_blocks(); ++b) {
      for (PageId p : sp_.pages(b, r)) homes.push_back(p);
    }
  }
  return host_.set_homes(homes);
}

// One step, top to bottom: inputs in; every op of the program scheduled in order (with the
// updates that may start during backward); the step's compute awaited; then, with clipping,
// every update in forward order (Note [Exact updates]).
Status Engine::run_step(long step, float lr, const int32_t* tokens, EngineStepResult* result,
                       const std::function<Status()>& on_grads) {
  STRATA_RETURN_IF_ERROR(optimizer_->take_finished_errors());
  learn_host_plan(step);
  STRATA_RETURN_IF_ERROR(copy_tokens_in(tokens));
  ops_->set_step(step);
  for (BlockState& b : blocks_) b.updated_this_step = false;
  for (size_t pos = 0; pos < program_.ops.size(); ++pos) {
    const Op& op = program_.ops[pos];
    if (pos == last_block_bwd_ && program_.wait_for_norm) read_ahead_first_update();
    STRATA_RETURN_IF_ERROR(schedule(pos, op, step));
    for (int b = 0; b < program_.num_blocks && o_.delayed_update && step > 0; ++b) {
      if (blocks_[b].last_param_use == pos) submit_publish(b, step);  // step-1's, after its reads
    }
    for (int b : op.updates) {
      if (!program_.wait_for_norm) {
        submit_update({.block = b, .step = step, .lr = lr, .discard_grads = !on_grads});
      }
    }
  }
  STRATA_RETURN_IF_ERROR(finish_compute(step, result));
  if (on_grads) {
    STRATA_RETURN_IF_ERROR(transfers_->synchronize_d2h());
    STRATA_RETURN_IF_ERROR(on_grads());
  }
  const float coef =
      o_.grad_clip > 0 ? kernels::clip_coefficient(result->grad_norm, o_.grad_clip) : 1.0f;
  result->clipped = coef < 1.0f;
  const std::vector<int>& order = program_.ops.back().updates;
  for (size_t i = 0; i < order.size() && program_.wait_for_norm; ++i) {
    submit_update({.block = order[i],
                  .step = step,
                  .lr = lr,
                  .coef = coef,
                  .next_block = i + 1 < order.size() ? order[i + 1] : -1});
  }
  ++steps_run_;
  return Status::Ok();
}

// The tokens: the staging buffer is free once the previous step's copy ran, and the device
// buffer once the previous step's compute did.
Status Engine::copy_tokens_in(const int32_t* tokens) {
  if (tokens_copied_) tokens_copied_->synchronize();
  std::memcpy(tokens_host_.data(), tokens, tokens_host_.size() * sizeof(int32_t));
  Stream& h2d = transfers_->h2d();
  if (last_compute_) h2d.wait(*last_compute_);
  STRATA_RETURN_IF_ERROR(device_.copy_async(ops_->tokens(), tokens_host_.data(),
                                            tokens_host_.size() * sizeof(int32_t),
                                            CopyKind::kHostToDevice, h2d));
  tokens_copied_ = RecordOn(device_, h2d);
  compute_->wait(*tokens_copied_);
  return Status::Ok();
}

// One op: the slots it needs (hits, then misses filled), its kernels launched, its finished
// gradients sent down.
Status Engine::schedule(size_t pos, const Op& op, long step) {
  Status st;
  std::vector<int> chosen = find_hits(op, &st);
  STRATA_RETURN_IF_ERROR(st);
  STRATA_RETURN_IF_ERROR(fill_misses(pos, op, step, chosen));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Event> done, launch(op, chosen, step));
  for (int b : op.grads_done) {
    const bool final =
        std::find(op.grads_final.begin(), op.grads_final.end(), b) != op.grads_final.end();
    STRATA_RETURN_IF_ERROR(copy_grad_down(b, done, step, final));
  }
  return Status::Ok();
}

// Hits first, so that a miss never picks a slot this op still needs. A gradient the op starts
// is never a hit.
std::vector<int> Engine::find_hits(const Op& op, Status* status) {
  std::vector<int> chosen(op.uses.size(), -1);
  for (size_t i = 0; i < op.uses.size() && status->ok(); ++i) {
    const SlotUse& u = op.uses[i];
    const bool starts = std::find(op.grads_started.begin(), op.grads_started.end(), u.block) !=
                        op.grads_started.end();
    if (u.role == SlotRole::kGrad && starts) continue;
    chosen[i] = slots_.find(u.block, u.role);
    STRATA_CHECK(u.role != SlotRole::kGrad || chosen[i] >= 0)
        << op.label() << ": gradient of block " << u.block << " not started";
    if (chosen[i] >= 0) *status = slots_.resolve_refresh(chosen[i]);
  }
  return chosen;
}

// Misses largest block first: a small block never takes the only slot a larger one fits.
Status Engine::fill_misses(size_t pos, const Op& op, long step, std::vector<int>& chosen) {
  std::vector<int> taken;
  std::vector<size_t> misses;
  for (size_t i = 0; i < op.uses.size(); ++i) {
    (chosen[i] >= 0 ? taken.push_back(chosen[i]) : misses.push_back(i));
  }
  auto bytes = [&](size_t i) { return ops_->slot_bytes(op.uses[i].block, op.uses[i].role); };
  std::stable_sort(misses.begin(), misses.end(),
                   [&](size_t a, size_t b) { return bytes(a) > bytes(b); });
  for (size_t i : misses) {
    const SlotUse& u = op.uses[i];
    const int v = slots_.choose_victim(pos, taken, bytes(i));
    STRATA_CHECK(v >= 0) << op.label() << ": no device slot of " << bytes(i) << " bytes to evict ("
                         << slots_.size() << " slots)";
    chosen[i] = v;
    taken.push_back(v);
    STRATA_RETURN_IF_ERROR(slots_.resolve_refresh(v));  // the load below waits for the refresh
    Slot& s = slots_[v];
    s.block = u.block;
    s.role = u.role;
    s.grad_active = u.role == SlotRole::kGrad;
    if (u.role == SlotRole::kParam) s.version = blocks_[u.block].param_version;
    if (u.role == SlotRole::kGrad && op.micro_batch == 0) {
      s.ready = s.last_use;  // zeroed by the op itself on the compute stream
      continue;
    }
    const bool param = u.role == SlotRole::kParam;
    static const std::vector<std::shared_future<Status>> kNoWait;
    STRATA_ASSIGN_OR_RETURN(
        s.ready, transfers_->load(s.ptr, u.block, param ? Role::kParam : Role::kGrad, s.last_use,
                                  param ? blocks_[u.block].update_done : kNoWait, step));
    if (param && ops_->sharded(u.block)) {
      STRATA_ASSIGN_OR_RETURN(s.ready, on_comm(u.block, "all-gather of the parameters of block",
                                               bytes(i),
                                               [ops = ops_.get(), b = u.block, ptr = s.ptr] {
                                                 return ops->gather_params(b, ptr);
                                               },
                                               s.ready, step));
    }
    slots_.used(v, s.ready, op_seq_);
  }
  return Status::Ok();
}

// The op's kernels on the compute stream after its slots are ready, between the activation copies
// it needs (layer-major's boundaries: BlockOps::stage_in/stage_out).
Result<std::shared_ptr<Event>> Engine::launch(const Op& op, const std::vector<int>& chosen,
                                              long step) {
  std::vector<float*> ptrs;
  for (int idx : chosen) {
    if (slots_[idx].ready) compute_->wait(*slots_[idx].ready);
    ptrs.push_back(slots_[idx].ptr);
  }
  STRATA_RETURN_IF_ERROR(ops_->stage_in(op, *compute_));
  EnqueueTimed(timeline_, *compute_, Queue::kCompute, op.label(), 0, step,
               [&] { compute_->launch([ops = ops_.get(), &op, ptrs] { ops->run(op, ptrs); }); });
  STRATA_RETURN_IF_ERROR(ops_->stage_out(op, *compute_));
  std::shared_ptr<Event> done = RecordOn(device_, *compute_);
  last_compute_ = done;
  ++op_seq_;
  for (int idx : chosen) slots_.used(idx, done, op_seq_);
  return done;
}

// A block's final gradient is summed over the ranks on the comm stream before it goes down
// (data parallelism): the d2h copy then waits on the sum instead of the kernel.
Status Engine::copy_grad_down(int block, std::shared_ptr<Event> after, long step, bool final) {
  const int idx = slots_.find(block, SlotRole::kGrad);
  STRATA_CHECK(idx >= 0);
  // The previous step's update must have read these pages before they are overwritten. It has
  // when the forward waited for it; with --delayed-update nothing else orders the two.
  BlockState& bs = blocks_[block];
  if (bs.grads_read.valid()) {
    STRATA_RETURN_IF_ERROR(
        bs.grads_read.get().with_context("optimizer update of block " + std::to_string(block)));
  }
  Slot& s = slots_[idx];
  if (final && comm_ != nullptr) {
    STRATA_ASSIGN_OR_RETURN(after, on_comm(block, "sum of the gradient of block",
                                           ops_->block_bytes(block),
                                           [ops = ops_.get(), block, ptr = s.ptr] {
                                             return ops->reduce_grad(block, ptr);
                                           },
                                           after, step));
  }
  STRATA_ASSIGN_OR_RETURN(bs.grad_ready, transfers_->copy_grad_down(s.ptr, block, after, step));
  // Completes after its kernel (and sum); a rank may own none of a small sharded block.
  slots_.used(idx, bs.grad_ready.empty() ? after : bs.grad_ready.back(), op_seq_ + 1);
  s.grad_active = false;
  return Status::Ok();
}

Result<std::shared_ptr<Event>> Engine::on_comm(int block, const char* what, uint64_t bytes,
                                               std::function<Status()> collective,
                                               const std::shared_ptr<Event>& after, long step) {
  STRATA_CHECK(comm_ != nullptr);
  comm_->wait(*after);
  const std::string label = std::string(what) + " " + std::to_string(block);
  EnqueueTimed(timeline_, *comm_, Queue::kComm, label, bytes, step, [&] {
    comm_->launch([this, label, collective = std::move(collective)] {
      {
        std::lock_guard<std::mutex> lock(comm_mu_);
        if (!comm_status_.ok()) return;  // a failed collective breaks the Comm: none follows
      }
      Status s = collective();
      std::lock_guard<std::mutex> lock(comm_mu_);
      if (!s.ok() && comm_status_.ok()) comm_status_ = s.with_context(label);
    });
  });
  return RecordOn(device_, *comm_);
}

// The step's collectives on the comm stream have run (the gradients' sums).
Status Engine::sync_comm() {
  if (comm_ == nullptr) return Status::Ok();
  STRATA_RETURN_IF_ERROR(comm_->synchronize().with_context("comm stream"));
  std::lock_guard<std::mutex> lock(comm_mu_);
  return comm_status_;
}

// The step's loss and norm, the same on every rank: the ops' sums over the tensor-parallel group
// and the pipeline's stages first (BlockOps::finish_grad_sums), then every micro-batch's loss, in
// order, over the data-parallel ranks.
Status Engine::finish_compute(long step, EngineStepResult* result) {
  STRATA_RETURN_IF_ERROR(compute_->synchronize().with_context("compute stream"));
  STRATA_RETURN_IF_ERROR(ops_->take_error());
  STRATA_RETURN_IF_ERROR(sync_comm());
  STRATA_RETURN_IF_ERROR(ops_->finish_grad_sums());
  result->compute_comm_s = ops_->take_compute_comm_s();
  std::vector<float> losses = ops_->losses();
  if (o_.comm != nullptr && o_.comm->size() > 1) {
    STRATA_ASSIGN_OR_RETURN(losses, GatherMicroBatchLosses(*o_.comm, losses));
  }
  double loss_sum = 0.0;
  for (float l : losses) {
    if (!std::isfinite(l)) {
      return Status::Aborted("step " + std::to_string(step + 1) + ": loss is " + std::to_string(l) +
                             "; lower " + Mention(Option::kLr) + " or enable " +
                             Mention(Option::kGradClip));
    }
    loss_sum += l;
  }
  result->device_at_end = device_.stats();
  result->memory_at_end = host_.manager().stats();
  result->loss = static_cast<float>(loss_sum / losses.size());
  result->grad_norm = GlobalGradNorm(ops_->grad_sums());
  return Status::Ok();
}

std::shared_future<Status> Engine::enqueue_after_updates(std::function<Status()> job) {
  return optimizer_->enqueue(std::move(job));
}

Status Engine::drain() {
  Status first;
  if (transfers_) first = transfers_->synchronize();
  if (compute_) {
    Status st = compute_->synchronize();
    if (first.ok()) first = st;
  }
  if (optimizer_) {
    Status st = optimizer_->drain();
    if (first.ok()) first = st;
  }
  return first;
}

}  // namespace strata::scheduler
