// The frame source (internal to memory/): a host frame for a page being loaded — a free one, or
// one taken from an eviction victim, writing dirty victims back to NVMe in groups
// (Note [Grouped write-back] in write_back.cc).
// Threads: any. Called with no page mutex held (Note [No hold and wait] in memory_manager.cc).
#pragma once

#include <cstdint>

#include "core/util/status.h"
#include "memory/manager_state.h"

namespace strata::memory::internal {

// What TryEvict did with a victim.
struct Eviction {
  void* frame = nullptr;  // the victim's frame, now the caller's
  bool staged = false;    // a dirty copy: its new NVMe version is staged instead
  bool clean = false;     // peek_clean: the copy is clean and droppable; it was left in place
};

// Tries to take v's host copy for reuse; nothing happens when v cannot be dropped now. A dirty
// copy is never dropped here: with `may_stage` its new NVMe version is staged (the write starts)
// and its frame is reusable once a commit made that version durable. `peek_clean`: only report
// a droppable clean copy. Errors come from the staging.
Result<Eviction> TryEvict(ManagerState& m, PageId v, bool may_stage, bool peek_clean);

// A host frame for `for_page`. may_wait = false (a prefetch) returns nullptr instead of
// waiting; `not_needed_before` > 0 then also forbids evicting pages needed no later than it.
// Timeout (with the stall report and a BudgetShortfall) after stall_timeout_ms without progress.
Result<void*> TakeFrame(ManagerState& m, PageId for_page, bool may_wait,
                        uint64_t not_needed_before);

}  // namespace strata::memory::internal
