#include "scheduler/slot_cache.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace strata::scheduler {

void SlotCache::add(float* ptr, uint64_t bytes) {
  Slot slot;
  slot.ptr = ptr;
  slot.bytes = bytes;
  slots_.push_back(std::move(slot));
}

int SlotCache::find(int block, SlotRole role) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.block != block || s.role != role) continue;
    if (role == SlotRole::kParam && s.version == blocks_[block].param_version) return int(i);
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
int SlotCache::choose_victim(size_t pos, const std::vector<int>& taken, uint64_t bytes) const {
  int best = -1;
  // Live: {0, next use, 0, 0}, farthest first. Dead: {1, ~bytes, free now, ~last use}.
  using Score = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>;
  Score best_score{0, 0, 0, 0};
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (std::find(taken.begin(), taken.end(), int(i)) != taken.end() || s.bytes < bytes) continue;
    if (s.block >= 0 && s.role == SlotRole::kGrad && s.grad_active) continue;
    uint64_t next = StepProgram::kNever;
    if (s.block >= 0 && s.role == SlotRole::kParam && s.version == blocks_[s.block].param_version) {
      // A use after the end of this step is dead: every block is updated in between — unless
      // the update already was and the slot holds (or is being refreshed to) its result.
      const uint64_t d = program_.next_use(s.block, SlotRole::kParam, pos);
      if (d != StepProgram::kNever &&
          (pos + d < program_.ops.size() || blocks_[s.block].updated_this_step)) {
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

void SlotCache::used(int slot, std::shared_ptr<Event> done, uint64_t seq) {
  slots_[slot].last_use = std::move(done);
  slots_[slot].last_use_seq = seq;
}

RefreshTarget SlotCache::mark_refresh(int block, uint64_t version) {
  for (Slot& s : slots_) {
    if (s.block != block || s.role != SlotRole::kParam || s.refresh.valid()) continue;
    RefreshTarget t{s.ptr, s.last_use, std::make_shared<RefreshPromise>()};
    s.refresh = t.done->get_future().share();
    s.version = version;
    s.ready = nullptr;
    return t;
  }
  return {};
}

Status SlotCache::resolve_refresh(int slot) {
  Slot& s = slots_[slot];
  if (!s.refresh.valid()) return Status::Ok();
  Result<std::shared_ptr<Event>> r = s.refresh.get();
  s.refresh = {};
  if (!r.ok()) {
    return r.status().with_context("optimizer update of block " + std::to_string(s.block));
  }
  s.ready = *r;
  s.last_use = *r;  // the refresh waited for the slot's previous last use
  return Status::Ok();
}

}  // namespace strata::scheduler
