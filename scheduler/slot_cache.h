// SlotCache: the device slots — the one mechanism that decides what is resident on the device
// (Note [Device residency] in memory/memory_manager.h). A slot is a device buffer that holds one
// block's parameters or its gradient in the block's contiguous layout (Note [Block slots] in
// memory_plan.h). The cache knows what each slot holds, the Events that order its reuse, and
// picks victims Belady-style over the step program's known future (Note [Driver and prefetch] in
// engine.h). It moves nothing itself: the driver fills and drains slots (transfers.h).
//
// Threads: driver only. Eager refresh (Note [Eager refresh] in engine.h) hands a slot's new ready
// Event from the optimizer thread through a future, resolved on the driver.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "core/device/device.h"
#include "core/util/status.h"
#include "scheduler/block_state.h"
#include "scheduler/step_program.h"

namespace strata::scheduler {

using RefreshFuture = std::shared_future<Result<std::shared_ptr<Event>>>;
using RefreshPromise = std::promise<Result<std::shared_ptr<Event>>>;

struct Slot {
  float* ptr = nullptr;
  uint64_t bytes = 0;  // holds any block of at most this size (scheduler/slot_sizes.h)
  int block = -1;      // -1: empty
  SlotRole role = SlotRole::kParam;
  uint64_t version = 0;             // the block's param_version when loaded
  bool grad_active = false;         // a gradient being accumulated (must not be evicted)
  std::shared_ptr<Event> ready;     // compute waits on it before using the content
  std::shared_ptr<Event> last_use;  // whoever overwrites the slot waits on it
  uint64_t last_use_seq = 0;        // the op count when last_use was scheduled (tie-break)
  // Set while the optimizer uploads the block's new version (Note [Eager refresh]).
  RefreshFuture refresh;
};

// What an update needs to refresh a slot in place (Note [Eager refresh]); dst is nullptr when
// no slot is to be refreshed.
struct RefreshTarget {
  float* dst = nullptr;
  std::shared_ptr<Event> after;  // the slot's last use before the refresh
  std::shared_ptr<RefreshPromise> done;
};

class SlotCache {
 public:
  // `program` and `blocks` are the Engine's and must outlive the cache.
  SlotCache(const StepProgram& program, const std::vector<BlockState>& blocks)
      : program_(program), blocks_(blocks) {}

  void add(float* ptr, uint64_t bytes);
  size_t size() const { return slots_.size(); }
  Slot& operator[](int i) { return slots_[i]; }

  // The slot holding (block, role) now: current parameters, or an active gradient; -1: none.
  int find(int block, SlotRole role) const;
  // Belady among the slots of at least `bytes` not in `taken`, as op `pos` needs one; -1 when
  // there is none.
  int choose_victim(size_t pos, const std::vector<int>& taken, uint64_t bytes) const;
  // Records that op number `seq` (completing at `done`) used the slot.
  void used(int slot, std::shared_ptr<Event> done, uint64_t seq);

  // Note [Eager refresh]: marks the slot holding `block`'s parameters as being refreshed to
  // version `version`; an empty target when no slot holds them.
  RefreshTarget mark_refresh(int block, uint64_t version);
  // Makes a pending refresh the slot's ready and last-use Event (waits until the optimizer has
  // enqueued it); the update's error if it failed.
  Status resolve_refresh(int slot);

 private:
  const StepProgram& program_;
  const std::vector<BlockState>& blocks_;
  std::vector<Slot> slots_;
};

}  // namespace strata::scheduler
