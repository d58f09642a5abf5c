// The handle table and the handle encoding (Note [Handle table] in handles.h).
#include "embed/handles.h"

#include <cstdio>
#include <utility>

#include "embed/layout.h"

namespace strata::embed {
namespace {

static_assert(sizeof(uintptr_t) == 8, "Note [Handle table]: handles encode 64-bit values");

constexpr uint64_t kLowMask = 0xFFFFFFFFull;
constexpr uint64_t kRuntimeMark = kLowMask;  // the low half of every runtime handle
constexpr uint64_t kMaxId = kLowMask;        // ids are 1 .. kMaxId
static_assert(kMaxTensors <= kRuntimeMark, "a tensor index must never read as a runtime handle");

}  // namespace

uintptr_t RuntimeHandleValue(uint64_t id) { return uintptr_t((id << 32) | kRuntimeMark); }

uintptr_t TensorHandleValue(uint64_t runtime_id, uint64_t index) {
  return uintptr_t((runtime_id << 32) | index);
}

std::string HandleText(uintptr_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(value));
  return text;
}

HandleTable& HandleTable::Process() {
  // Never destroyed (Note [Handle table]): a deliberate leak of one table per process.
  static HandleTable& table = *new HandleTable;
  return table;
}

Result<uint64_t> HandleTable::add(std::shared_ptr<Runtime> runtime) {
  std::unique_lock lock(mu_);
  if (next_id_ > kMaxId) {
    return Status::ResourceExhausted("strata_runtime_create: this process has created " +
                                     std::to_string(kMaxId) +
                                     " runtimes, as many as runtime handles can number");
  }
  const uint64_t id = next_id_++;
  open_.emplace(id, std::move(runtime));
  return id;
}

Result<RuntimeRef> HandleTable::find(uintptr_t handle, const char* call) const {
  const uint64_t id = uint64_t(handle) >> 32;
  std::shared_lock lock(mu_);
  if ((uint64_t(handle) & kLowMask) == kRuntimeMark) {
    auto it = open_.find(id);
    if (it != open_.end()) return RuntimeRef{id, it->second};
    if (issued_locked(id)) {
      return Status::InvalidArgument(std::string(call) + ": runtime handle " + HandleText(handle) +
                                     " was closed by strata_runtime_close; a closed runtime's "
                                     "handle cannot be used again");
    }
  }
  return Status::InvalidArgument(std::string(call) + ": " + HandleText(handle) +
                                 " is not a runtime handle (strata_runtime_create gives them)");
}

Result<uint64_t> HandleTable::tensor_index(uintptr_t handle, uint64_t runtime_id,
                                           const char* call) const {
  const std::string what = std::string(call) + ": tensor handle " + HandleText(handle);
  if (handle == 0) {
    return Status::InvalidArgument(std::string(call) + ": the tensor handle is NULL");
  }
  const uint64_t id = uint64_t(handle) >> 32, index = uint64_t(handle) & kLowMask;
  if (id == runtime_id && index != kRuntimeMark) return index;
  std::shared_lock lock(mu_);
  if (!issued_locked(id) || index == kRuntimeMark) {
    return Status::InvalidArgument(what +
                                   " is not a tensor handle (strata_register and "
                                   "strata_find give them)");
  }
  if (open_.count(id) == 0) {
    return Status::InvalidArgument(what +
                                   " belongs to a runtime that was closed; a tensor "
                                   "handle is valid only with the runtime that gave it");
  }
  return Status::InvalidArgument(what +
                                 " belongs to another runtime; a tensor handle is valid "
                                 "only with the runtime that gave it");
}

void HandleTable::remove(uint64_t id) {
  std::unique_lock lock(mu_);
  open_.erase(id);
}

}  // namespace strata::embed
