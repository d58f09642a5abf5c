#include "scheduler/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "core/kernels/adamw.h"
#include "core/util/log.h"
#include "scheduler/grad_norm.h"

namespace strata::scheduler {

using memory::Access;
using memory::PageId;
using memory::PageRef;
using memory::Role;
using memory::Tier;

namespace {

// Page indices (of each of grad, m, v, param) the optimizer reads ahead from NVMe: at most 8,
// and at most 1/32 of the host pool's pages, so that the 4 x read-ahead frames stay within 1/8
// of the pool. A deeper read-ahead in a small pool evicts pages still needed before it is
// used: the demo (64-page pool) read 361 MiB from NVMe per step with 8 and 192 with 2, and ran
// 6% slower.
constexpr size_t kOptimizerPrefetchMax = 8;
constexpr uint64_t kPrefetchPoolFraction = 32;

// Note [Update read-ahead]
// With clipping the updates are submitted once the norm is known, after backward, and the first
// update's NVMe reads used to start only then. In the cost configuration the host pool is full
// of dirty pages at that moment, so the first read also waited for a group write-back to make
// room: 12-29 ms before the first AdamW, with the next forward waiting behind it. So when
// compute reaches the step's last block backward (a host function launched on the compute
// stream), the first optimizer_read_ahead_ page indices of the first update are prefetched: the
// reads and the write-backs they need overlap that block's backward. In traces the first
// update's stall is gone, and the next forward starts ~20 ms after the norm instead of 24-47.

float* AlignedTake(float*& cursor, int64_t floats) {
  float* p = cursor;
  cursor += (floats + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
  return p;
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Engine::Engine(const EngineOptions& o)
    : o_(o),
      layout_(*o.layout),
      sp_(*o.pages),
      mm_(*o.memory),
      device_(*o.device),
      timeline_(*o.timeline) {}

Engine::~Engine() {
  Drain().IgnoreError();
  {
    std::lock_guard lock(pins_mu_);
    pins_.clear();
  }
  // Streams run what is still queued (page releases) before they go.
  compute_.reset();
  h2d_.reset();
  d2h_.reset();
  d2h_first_.reset();
  refresh_.reset();
  for (void* p : allocations_) device_.free(p);
}

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  STRATA_CHECK(options.layout && options.pages && options.memory && options.device &&
               options.timeline);
  STRATA_CHECK(options.micro_rows > 0 && options.batch % options.micro_rows == 0);
  std::unique_ptr<Engine> e(new Engine(options));
  STRATA_RETURN_IF_ERROR(e->Setup());
  return e;
}

Status Engine::Setup() {
  const GptConfig& c = layout_.config;
  const int L = c.n_layer, B = o_.micro_rows, T = o_.seq;
  micro_batches_ = o_.batch / o_.micro_rows;
  dloss_ = 1.0f / float(int64_t(o_.batch) * T);
  program_ = BuildStepProgram(L, micro_batches_, o_.grad_clip > 0);
  const int blocks = layout_.num_blocks();
  param_version_.assign(blocks, 0);
  updated_this_step_.assign(blocks, false);
  update_done_.resize(blocks);
  grads_read_.resize(blocks);
  last_param_use_.assign(blocks, 0);
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    for (const SlotUse& u : program_.ops[i].uses) {
      if (u.role == SlotRole::kParam) last_param_use_[u.block] = i;
    }
  }
  grad_ready_.resize(blocks);
  block_sums_.assign(blocks, 0.0);
  losses_.assign(micro_batches_, 0.0f);

  compute_ = device_.create_stream("compute");
  h2d_ = device_.create_stream("h2d");
  d2h_ = device_.create_stream("d2h");
  d2h_first_ = device_.create_stream("d2h first");
  refresh_ = device_.create_stream("refresh");
  compute_arena_ = std::make_unique<tbb::task_arena>(o_.threads);
  optimizer_arena_ = std::make_unique<tbb::task_arena>(o_.threads);
  const uint64_t pool_pages = mm_.options().host_bytes / sp_.page_bytes();
  optimizer_read_ahead_ =
      std::clamp<size_t>(pool_pages / kPrefetchPoolFraction, 1, kOptimizerPrefetchMax);
  optimizer_ = std::make_unique<HostQueue>("optimizer");

  auto alloc = [&](uint64_t bytes, const char* what) -> Result<void*> {
    Result<void*> r = device_.alloc(bytes);
    if (!r.ok()) return r.status().WithContext(std::string("allocating ") + what);
    allocations_.push_back(*r);
    return *r;
  };
  STRATA_ASSIGN_OR_RETURN(void* tokens, alloc(o_.plan.tokens_bytes, "the step's tokens"));
  tokens_ = static_cast<int32_t*>(tokens);
  STRATA_ASSIGN_OR_RETURN(void* acts, alloc(o_.plan.acts_bytes, "activations"));
  float* cur = static_cast<float*>(acts);
  const int64_t residual = int64_t(B) * T * c.n_embd;
  // The order of ActivationFloats (scheduler/memory_plan.cc).
  emb_out_ = AlignedTake(cur, residual);
  layer_acts_.resize(L);
  outputs_.assign(L, nullptr);
  for (int l = 0; l < L; ++l) {
    if (Recomputed(l)) {
      outputs_[l] = AlignedTake(cur, residual);
    } else {
      layer_acts_[l] =
          CarveTransformerActs(c, B, T, AlignedTake(cur, TransformerActsFloats(c, B, T)));
      outputs_[l] = layer_acts_[l].out;
    }
  }
  if (o_.plan.recompute()) {
    work_acts_ = CarveTransformerActs(c, B, T, AlignedTake(cur, TransformerActsFloats(c, B, T)));
  }
  head_acts_ = CarveHeadActs(c, B, T, AlignedTake(cur, HeadActsFloats(c, B, T)));
  scratch_ = CarveBackwardScratch(c, B, T, AlignedTake(cur, BackwardScratchFloats(c, B, T)));
  dres_ = AlignedTake(cur, residual);
  STRATA_CHECK(reinterpret_cast<char*>(cur) <= static_cast<char*>(acts) + o_.plan.acts_bytes)
      << "activation carving overflows its buffer";
  for (uint64_t bytes : o_.plan.slot_sizes) {
    STRATA_ASSIGN_OR_RETURN(void* s, alloc(bytes, "a block slot"));
    Slot slot;
    slot.ptr = static_cast<float*>(s);
    slot.bytes = bytes;
    slots_.push_back(std::move(slot));
  }
  tokens_host_.resize(size_t(2) * o_.batch * T);
  return PinHostHomes();
}

Status Engine::PinHostHomes() {
  pins_.resize(sp_.num_pages());
  pinned_home_.assign(sp_.num_pages(), false);
  std::vector<Role> roles;
  if (o_.plan.params == Home::kHost || o_.plan.params_host_pinned) roles.push_back(Role::kParam);
  if (o_.plan.optimizer == Home::kHost) {
    roles.push_back(Role::kAdamM);
    roles.push_back(Role::kAdamV);
    if (o_.delayed_update) roles.push_back(Role::kMaster);
  }
  for (Role r : roles) {
    for (int b = 0; b < layout_.num_blocks(); ++b) {
      for (PageId p : sp_.pages(b, r)) {
        pinned_home_[p] = true;
        STRATA_RETURN_IF_ERROR(Repin(p));
      }
    }
  }
  return Status::Ok();
}

void Engine::Unpin(PageId page) {
  if (!pinned_home_[page]) return;
  std::lock_guard lock(pins_mu_);
  pins_[page].release();
}

Status Engine::Repin(PageId page) {
  if (!pinned_home_[page]) return Status::Ok();
  memory::AcquireOptions ao;
  ao.holder = "host home pin";
  STRATA_ASSIGN_OR_RETURN(PageRef ref, mm_.acquire_sync(page, Access::kRead, ao));
  std::lock_guard lock(pins_mu_);
  pins_[page] = std::move(ref);
  return Status::Ok();
}

std::shared_ptr<Event> Engine::Record(Stream& stream) {
  std::shared_ptr<Event> ev = device_.create_event();
  stream.record(*ev);
  return ev;
}

void Engine::Mark(Stream& stream, Queue queue, std::string name, uint64_t bytes, long step,
                  const std::function<void()>& enqueue) {
  auto t0 = std::make_shared<int64_t>(0);
  Timeline* tl = &timeline_;
  stream.launch([t0, tl] { *t0 = tl->now_ns(); });
  enqueue();
  stream.launch([t0, tl, queue, name = std::move(name), bytes, step] {
    tl->add(Slice{queue, name, *t0, tl->now_ns(), bytes, step});
  });
}

int Engine::FindSlot(int block, SlotRole role) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.block != block || s.role != role) continue;
    if (role == SlotRole::kParam && s.version == param_version_[block]) return int(i);
    if (role == SlotRole::kGrad && s.grad_active) return int(i);
  }
  return -1;
}

// Belady over the program, with tie-breaks for dead slots (empty, stale, finished gradients):
// first the smallest that fits (a small block in a large slot can leave a large block, or the
// next gradient, only a slot whose copy is still in flight), then among those one that is free
// now (its last use completed: overwriting it waits for nothing), then the one whose last use was
// scheduled earliest, likely free first (a gradient copy counts as one op later than its kernel).
// Waiting on the in-order h2d stream would hold up every later load too. Only the choice among
// equal-sized dead slots depends on timing, and those are interchangeable: which blocks stay
// resident, and so the bytes a step moves, does not.
int Engine::ChooseVictim(size_t pos, const std::vector<int>& taken, uint64_t bytes) const {
  int best = -1;
  // Live: {0, next use, 0, 0}, farthest first. Dead: {1, ~bytes, free now, ~last use}.
  using Score = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>;
  Score best_score{0, 0, 0, 0};
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (Contains(taken, int(i)) || slots_[i].bytes < bytes) continue;
    const Slot& s = slots_[i];
    if (s.block >= 0 && s.role == SlotRole::kGrad && s.grad_active) continue;
    uint64_t next = StepProgram::kNever;
    if (s.block >= 0 && s.role == SlotRole::kParam && s.version == param_version_[s.block]) {
      // A use after the end of this step is dead: every block is updated in between — unless
      // the update already was and the slot holds (or is being refreshed to) its result.
      const uint64_t d = program_.next_use(s.block, SlotRole::kParam, pos);
      if (d != StepProgram::kNever &&
          (pos + d < program_.ops.size() || updated_this_step_[s.block])) {
        next = d;
      }
    }
    Score score{0, next, 0, 0};
    if (next == StepProgram::kNever) {
      const bool free_now = !s.refresh.valid() && (!s.last_use || s.last_use->query());
      score = Score{1, ~s.bytes, free_now ? 1 : 0, ~s.last_use_seq};
    }
    if (best < 0 || score > best_score) {
      best = int(i);
      best_score = score;
    }
  }
  return best;
}

Status Engine::UploadPage(PageRef ref, int block, Role role, size_t k, float* dst,
                          Stream& stream, Queue queue, long step) {
  const auto& pieces = sp_.pieces(block, role, k);
  uint64_t bytes = 0;
  for (const Piece& p : pieces) bytes += p.bytes;
  auto held = std::make_shared<PageRef>(std::move(ref));
  Status st;
  Mark(stream, queue,
       std::string(memory::RoleName(role)) + " b" + std::to_string(block) + " p" +
           std::to_string(k),
       bytes, step, [&] {
         const char* src = static_cast<const char*>(held->data());
         char* to = reinterpret_cast<char*>(dst);
         for (const Piece& p : pieces) {
           if (!st.ok()) break;
           st = device_.copy_async(to + p.block_offset, src + p.page_offset, p.bytes,
                                   CopyKind::kHostToDevice, stream);
         }
         stream.launch([held] { held->release(); });  // the pin ends once the copies ran
       });
  return st;
}

Status Engine::LoadSlot(int slot, int block, Role role, long step) {
  Slot& s = slots_[slot];
  if (s.last_use) h2d_->wait(*s.last_use);
  const auto& pages = sp_.pages(block, role);
  if (mm_.options().nvme != nullptr) {
    for (PageId p : pages) mm_.prefetch(p);
  }
  memory::AcquireOptions ao;
  ao.holder = "load block " + std::to_string(block) + " " + memory::RoleName(role);
  for (size_t k = 0; k < pages.size(); ++k) {
    if (role == Role::kParam && k < update_done_[block].size()) {
      STRATA_RETURN_IF_ERROR(update_done_[block][k].get().WithContext(
          "optimizer update of block " + std::to_string(block)));
    }
    const int64_t t0 = timeline_.now_ns();
    STRATA_ASSIGN_OR_RETURN(PageRef ref,
                            mm_.acquire_sync(pages[k], Access::kRead, ao));
    timeline_.add(Slice{Queue::kFetch, "page " + std::to_string(pages[k]), t0, timeline_.now_ns(),
                        sp_.page_bytes(), step});
    STRATA_RETURN_IF_ERROR(
        UploadPage(std::move(ref), block, role, k, s.ptr, *h2d_, Queue::kH2D, step));
  }
  s.ready = Record(*h2d_);
  s.last_use = s.ready;
  s.last_use_seq = op_seq_;
  return Status::Ok();
}

Status Engine::CopyGradDown(int slot, int block, const std::shared_ptr<Event>& after, long step) {
  Slot& s = slots_[slot];
  // The previous step's update must have read these pages before they are overwritten. It has
  // when the forward waited for it; with --delayed-update nothing else orders the two.
  if (grads_read_[block].valid()) {
    STRATA_RETURN_IF_ERROR(
        grads_read_[block].get().WithContext("optimizer update of block " + std::to_string(block)));
  }
  // Note [Gradient order].
  Stream& d2h = block == 0 ? *d2h_first_ : *d2h_;
  const Queue queue = block == 0 ? Queue::kD2HFirst : Queue::kD2H;
  d2h.wait(*after);
  const auto& pages = sp_.pages(block, Role::kGrad);
  std::vector<std::shared_ptr<Event>> page_ready;
  memory::AcquireOptions ao;
  ao.holder = "grad block " + std::to_string(block);
  for (size_t k = 0; k < pages.size(); ++k) {
    const int64_t t0 = timeline_.now_ns();
    STRATA_ASSIGN_OR_RETURN(PageRef ref,
                            mm_.acquire_sync(pages[k], Access::kOverwrite, ao));
    timeline_.add(Slice{Queue::kFetch, "grad page " + std::to_string(pages[k]), t0,
                        timeline_.now_ns(), 0, step});
    const auto& pieces = sp_.pieces(block, Role::kGrad, k);
    uint64_t bytes = 0;
    for (const Piece& p : pieces) bytes += p.bytes;
    auto held = std::make_shared<PageRef>(std::move(ref));
    Status st;
    Mark(d2h, queue, "grad b" + std::to_string(block) + " p" + std::to_string(k), bytes,
         step, [&] {
           char* dst = static_cast<char*>(held->data());
           const char* src = reinterpret_cast<const char*>(s.ptr);
           for (const Piece& p : pieces) {
             if (!st.ok()) break;
             st = device_.copy_async(dst + p.page_offset, src + p.block_offset, p.bytes,
                                     CopyKind::kDeviceToHost, d2h);
           }
           d2h.launch([held] { held->release(); });
         });
    STRATA_RETURN_IF_ERROR(st);
    page_ready.push_back(Record(d2h));
  }
  s.last_use = page_ready.back();
  s.last_use_seq = op_seq_ + 1;  // completes after its kernel
  s.grad_active = false;
  grad_ready_[block] = std::move(page_ready);
  return Status::Ok();
}

Status Engine::Schedule(size_t pos, const Op& op, long step) {
  std::vector<int> chosen(op.uses.size(), -1), taken;
  // Hits first, so that a miss never picks a slot this op still needs.
  for (size_t i = 0; i < op.uses.size(); ++i) {
    const SlotUse& u = op.uses[i];
    if (u.role == SlotRole::kGrad && Contains(op.grads_started, u.block)) continue;
    const int idx = FindSlot(u.block, u.role);
    if (idx >= 0) STRATA_RETURN_IF_ERROR(ResolveRefresh(idx));
    if (u.role == SlotRole::kGrad) {
      STRATA_CHECK(idx >= 0) << op.label() << ": gradient of block " << u.block << " not started";
    }
    if (idx >= 0) {
      chosen[i] = idx;
      taken.push_back(idx);
    }
  }
  // Misses largest block first: a small block never takes the only slot a larger one fits.
  std::vector<size_t> misses;
  for (size_t i = 0; i < op.uses.size(); ++i) {
    if (chosen[i] < 0) misses.push_back(i);
  }
  auto block_bytes = [&](size_t i) { return uint64_t(layout_.blocks[op.uses[i].block].numel) * 4; };
  std::stable_sort(misses.begin(), misses.end(),
                   [&](size_t a, size_t b) { return block_bytes(a) > block_bytes(b); });
  for (size_t i : misses) {
    const SlotUse& u = op.uses[i];
    const int v = ChooseVictim(pos, taken, block_bytes(i));
    STRATA_CHECK(v >= 0) << op.label() << ": no device slot of " << block_bytes(i)
                         << " bytes to evict (" << slots_.size() << " slots)";
    chosen[i] = v;
    taken.push_back(v);
    STRATA_RETURN_IF_ERROR(ResolveRefresh(v));  // the load below waits for the refresh
    Slot& s = slots_[v];
    s.block = u.block;
    s.role = u.role;
    if (u.role == SlotRole::kParam) {
      s.version = param_version_[u.block];
      s.grad_active = false;
      STRATA_RETURN_IF_ERROR(LoadSlot(v, u.block, Role::kParam, step));
    } else {
      s.grad_active = true;
      if (op.micro_batch == 0) {
        s.ready = s.last_use;  // zeroed by the op itself on the compute stream
      } else {
        STRATA_RETURN_IF_ERROR(LoadSlot(v, u.block, Role::kGrad, step));
      }
    }
  }
  for (int idx : chosen) {
    if (slots_[idx].ready) compute_->wait(*slots_[idx].ready);
  }
  std::vector<float*> ptrs;
  for (int idx : chosen) ptrs.push_back(slots_[idx].ptr);
  Mark(*compute_, Queue::kCompute, op.label(), 0, step,
       [&] { compute_->launch([this, &op, ptrs] { RunOp(op, ptrs); }); });
  std::shared_ptr<Event> done = Record(*compute_);
  last_compute_ = done;
  ++op_seq_;
  for (int idx : chosen) {
    slots_[idx].last_use = done;
    slots_[idx].last_use_seq = op_seq_;
  }
  for (int b : op.grads_done) {
    const int idx = FindSlot(b, SlotRole::kGrad);
    STRATA_CHECK(idx >= 0);
    STRATA_RETURN_IF_ERROR(CopyGradDown(idx, b, done, step));
  }
  return Status::Ok();
}

const float* Engine::BlockInput(int layer) const {
  return layer == 0 ? emb_out_ : outputs_[layer - 1];
}

const TransformerActs& Engine::ActsFor(int layer) {
  if (!Recomputed(layer)) return layer_acts_[layer];
  work_acts_.out = outputs_[layer];
  return work_acts_;
}

void Engine::RunOp(const Op& op, const std::vector<float*>& ptrs) {
  const GptConfig& c = layout_.config;
  const int B = o_.micro_rows, T = o_.seq, L = c.n_layer;
  const KernelTable& k = device_.kernels();
  // The sim device's honesty check: the op touches only device-resident memory.
  for (size_t i = 0; i < ptrs.size(); ++i) {
    const int64_t floats = layout_.blocks[op.uses[i].block].numel;
    STRATA_CHECK(device_.is_device_memory(ptrs[i], size_t(floats) * 4))
        << op.label() << ": slot " << i << " is not device memory";
  }
  STRATA_CHECK(device_.is_device_memory(emb_out_, 4) && device_.is_device_memory(tokens_, 4));
  const int32_t* x = tokens_ + int64_t(op.micro_batch) * B * T;
  const int32_t* y = tokens_ + int64_t(o_.batch) * T + int64_t(op.micro_batch) * B * T;
  const float* head_in = BlockInput(L);
  const int64_t wte_offset = layout_.embedding().tensors[kWte].offset;
  if (o_.skip_kernels) {
    losses_[op.micro_batch] = 0.0f;
    for (int b : op.grads_final) block_sums_[b] = 0.0;
    return;
  }
  compute_arena_->execute([&] {
    if (op.micro_batch == 0) {
      for (size_t i = 0; i < op.uses.size(); ++i) {
        if (op.uses[i].role == SlotRole::kGrad && Contains(op.grads_started, op.uses[i].block)) {
          std::memset(ptrs[i], 0, size_t(layout_.blocks[op.uses[i].block].numel) * 4);
        }
      }
    }
    switch (op.kind) {
      case OpKind::kEmbedFwd:
        EmbeddingForward(k, layout_, ptrs[0], x, B, T, emb_out_);
        break;
      case OpKind::kBlockFwd: {
        const int l = op.block - 1;
        TransformerForward(k, layout_, l, ptrs[0], BlockInput(l), B, T, ActsFor(l));
        break;
      }
      case OpKind::kHeadFwd:
        losses_[op.micro_batch] =
            HeadForward(k, layout_, ptrs[0], ptrs[1] + wte_offset, head_in, y, B, T, head_acts_);
        break;
      case OpKind::kHeadBwd:
        HeadBackward(k, layout_, ptrs[0], ptrs[2], ptrs[1] + wte_offset, ptrs[3] + wte_offset,
                     head_in, y, B, T, head_acts_, scratch_, dloss_, dres_);
        break;
      case OpKind::kBlockBwd: {
        const int l = op.block - 1;
        if (Recomputed(l)) {
          TransformerForward(k, layout_, l, ptrs[0], BlockInput(l), B, T, ActsFor(l));
        }
        TransformerBackward(k, layout_, l, ptrs[0], ptrs[1], BlockInput(l), B, T, ActsFor(l),
                            scratch_, dres_);
        break;
      }
      case OpKind::kEmbedBwd:
        EmbeddingBackward(k, layout_, ptrs[0], dres_, x, B, T);
        break;
    }
    for (int b : op.grads_final) {
      for (size_t i = 0; i < op.uses.size(); ++i) {
        if (op.uses[i].block == b && op.uses[i].role == SlotRole::kGrad) {
          block_sums_[b] = BlockGradSumOfSquares(layout_.blocks[b], ptrs[i]);
        }
      }
    }
  });
}

Status Engine::RunStep(long step, float lr, const int32_t* tokens, EngineStepResult* result,
                       const std::function<Status()>& on_grads) {
  // Errors of finished optimizer jobs surface here; the rest are checked later (or by Drain).
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++it;
      continue;
    }
    STRATA_RETURN_IF_ERROR(it->get().WithContext("optimizer queue"));
    it = jobs_.erase(it);
  }
  // The tokens: the staging buffer is free once the previous step's copy ran.
  if (tokens_copied_) tokens_copied_->synchronize();
  std::memcpy(tokens_host_.data(), tokens, tokens_host_.size() * sizeof(int32_t));
  if (last_compute_) h2d_->wait(*last_compute_);
  STRATA_RETURN_IF_ERROR(device_.copy_async(tokens_, tokens_host_.data(),
                                            tokens_host_.size() * sizeof(int32_t),
                                            CopyKind::kHostToDevice, *h2d_));
  tokens_copied_ = Record(*h2d_);
  compute_->wait(*tokens_copied_);
  updated_this_step_.assign(updated_this_step_.size(), false);

  // Note [Update read-ahead]: the position of the step's last block backward.
  size_t last_block_bwd = program_.ops.size();
  for (size_t pos = 0; pos < program_.ops.size(); ++pos) {
    if (program_.ops[pos].kind == OpKind::kBlockBwd) last_block_bwd = pos;
  }
  for (size_t pos = 0; pos < program_.ops.size(); ++pos) {
    const Op& op = program_.ops[pos];
    if (pos == last_block_bwd && program_.wait_for_norm) {
      // Runs when compute reaches the last block backward, about one block before the norm.
      compute_->launch([this] {
        const std::vector<int>& order = program_.ops.back().updates;
        if (order.empty()) return;
        for (size_t k = 0; k < optimizer_read_ahead_; ++k) {
          PrefetchUpdatePage(order[0], order.size() > 1 ? order[1] : -1, k);
        }
      });
    }
    STRATA_RETURN_IF_ERROR(Schedule(pos, op, step));
    if (o_.delayed_update && step > 0) {  // publish step-1's update after the last read
      for (int b = 0; b < program_.num_blocks; ++b) {
        if (last_param_use_[b] == pos) SubmitPublish(b);
      }
    }
    if (!program_.wait_for_norm) {
      for (int b : op.updates) {
        SubmitUpdate({.block = b, .step = step, .lr = lr, .coef = 1.0f,
                      .discard_grads = !on_grads});
      }
    }
  }
  STRATA_RETURN_IF_ERROR(compute_->synchronize().WithContext("compute stream"));
  double loss_sum = 0.0;
  for (float l : losses_) {
    if (!std::isfinite(l)) {
      return Status::Aborted("step " + std::to_string(step + 1) + ": loss is " + std::to_string(l) +
                             "; lower --lr or enable --grad-clip");
    }
    loss_sum += l;
  }
  result->device_at_end = device_.stats();
  result->memory_at_end = mm_.stats();
  result->loss = static_cast<float>(loss_sum / micro_batches_);
  result->grad_norm = GlobalGradNorm(block_sums_);
  float coef = 1.0f;
  if (o_.grad_clip > 0) coef = kernels::clip_coefficient(result->grad_norm, o_.grad_clip);
  result->clipped = coef < 1.0f;
  if (on_grads) {
    STRATA_RETURN_IF_ERROR(d2h_->synchronize().WithContext("d2h stream"));
    STRATA_RETURN_IF_ERROR(d2h_first_->synchronize().WithContext("d2h stream"));
    STRATA_RETURN_IF_ERROR(on_grads());
  }
  if (program_.wait_for_norm) {
    const std::vector<int>& order = program_.ops.back().updates;
    for (size_t i = 0; i < order.size(); ++i) {
      SubmitUpdate({.block = order[i], .step = step, .lr = lr, .coef = coef,
                    .next_block = i + 1 < order.size() ? order[i + 1] : -1});
    }
  }
  return Status::Ok();
}

std::shared_future<Status> Engine::EnqueueAfterUpdates(std::function<Status()> job) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::shared_future<Status> done = promise->get_future().share();
  optimizer_->submit([promise, job = std::move(job)] { promise->set_value(job()); });
  return done;
}

Status Engine::Drain() {
  Status first;
  if (h2d_) first = h2d_->synchronize();
  for (Stream* d2h : {d2h_.get(), d2h_first_.get()}) {
    if (d2h == nullptr) continue;
    Status st = d2h->synchronize();
    if (first.ok()) first = st;
  }
  if (compute_) {
    Status st = compute_->synchronize();
    if (first.ok()) first = st;
  }
  if (optimizer_) optimizer_->drain();
  if (refresh_) {  // filled by the optimizer thread: after its drain
    Status st = refresh_->synchronize();
    if (first.ok()) first = st;
  }
  for (const std::shared_future<Status>& job : jobs_) {
    Status st = job.get();
    if (first.ok() && !st.ok()) first = st.WithContext("optimizer queue");
  }
  jobs_.clear();
  return first;
}

}  // namespace strata::scheduler
