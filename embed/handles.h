// Handles: what the values of strata_runtime* and strata_tensor (include/strata.h) are, and the
// process-wide table that turns a runtime handle back into its Runtime.
//
// Note [Handle table]
// Rationale. A handle the embedder passes may be stale (its runtime was closed), foreign (a
// tensor of another runtime) or made up. Were a runtime handle a pointer to the Runtime, a call
// after strata_runtime_close would read freed memory, and nothing could tell; were a tensor
// handle an index, another runtime's tensor 0 would be this runtime's tensor 0. strata.h
// promises that every call checks the handles it takes, so neither may be a bare pointer or
// index.
// Approach. A runtime handle's value is an id, never dereferenced, looked up in one
// process-wide table of open runtimes (a kernel's fd table is the same idea). Ids are never
// reused in a process, so an id that was issued and is no longer in the table names a closed
// runtime. A tensor handle carries its runtime's id and its index, so a call checks that the
// tensor is of the runtime it was given. The runtime id doubles as the handle's generation: a
// tensor handle cannot outlive its runtime and come back meaning another tensor, since no later
// runtime has that id.
// Encoding (64-bit values):
//   runtime handle  (id << 32) | 0xFFFFFFFF
//   tensor handle   (runtime id << 32) | index        index < 0xFFFFFFFF
// ids are 1 .. 2^32 - 1: a process may create 4294967295 runtimes. A value whose top half is 0
// (a small made-up number, a cast index) is never a handle.
// What stays undefined: a value the caller made up (or cast from another type) that happens to
// decode to an open runtime, or to a tensor of the runtime it is passed with.
// Implementation. The table is the one piece of global mutable state in embed/: handles are
// checked by value in calls that carry no other context, so the table cannot belong to anything
// the caller passes. It is never destroyed (a runtime left open at exit is not torn down by
// exit-time destructors while its threads may still run; it lived until exit before the table
// too). The table holds each open Runtime by shared_ptr; a call looks its runtime up and holds
// the shared_ptr for the call's length, so a close racing a call (which strata.h forbids) still
// cannot free the Runtime under it: the call then sees a closed runtime.
// Threads: every function may be called from any thread; the table takes its own lock (shared
// for look-ups), held only for the look-up itself.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "core/util/status.h"

namespace strata::embed {

class Runtime;

uintptr_t RuntimeHandleValue(uint64_t id);
uintptr_t TensorHandleValue(uint64_t runtime_id, uint64_t index);
// "0x1ffffffff" for messages.
std::string HandleText(uintptr_t value);

// A looked-up runtime: holding it keeps the Runtime alive.
struct RuntimeRef {
  uint64_t id = 0;
  std::shared_ptr<Runtime> runtime;
};

class HandleTable {
 public:
  // The process's table (Note [Handle table]).
  static HandleTable& Process();

  // Adds an open runtime and returns its id. ResourceExhausted once every id was issued.
  Result<uint64_t> add(std::shared_ptr<Runtime> runtime);
  // The open runtime of a runtime handle's value. InvalidArgument, worded for `call`, for a
  // closed runtime or a value that is no runtime handle.
  Result<RuntimeRef> find(uintptr_t handle, const char* call) const;
  // The index of the tensor a handle names, if the handle is of runtime `runtime_id`.
  // InvalidArgument naming the handle otherwise (NULL, another runtime's, a closed runtime's, not
  // a handle). The index itself is checked by the Runtime (Runtime::check_tensor).
  Result<uint64_t> tensor_index(uintptr_t handle, uint64_t runtime_id, const char* call) const;
  // Removes a closed runtime; later look-ups of its handles say it was closed.
  void remove(uint64_t id);

 private:
  HandleTable() = default;
  // Whether `id` was issued (and so, if not open, closed). Under mu_.
  bool issued_locked(uint64_t id) const { return id != 0 && id < next_id_; }

  mutable std::shared_mutex mu_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Runtime>> open_;
};

}  // namespace strata::embed
