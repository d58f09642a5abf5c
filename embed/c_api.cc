// The C API (include/strata.h) over embed::Runtime: handles (Note [Handle table] in
// handles.h), status codes, the per-thread last error, and a catch of every C++ exception at
// the boundary. strata_runtime is never defined: its pointers are handle values.
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "embed/handles.h"
#include "embed/messages.h"
#include "embed/options.h"
#include "embed/runtime.h"
#include "strata.h"

struct strata_options {
  strata::embed::OptionValues values;
};

namespace {

using strata::Status;
using strata::StatusCode;
using strata::embed::HandleTable;
using strata::embed::RuntimeRef;

thread_local std::string t_last_error;

strata_status ToC(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return STRATA_OK;
    case StatusCode::kInvalidArgument: return STRATA_INVALID_ARGUMENT;
    case StatusCode::kNotFound: return STRATA_NOT_FOUND;
    case StatusCode::kAlreadyExists: return STRATA_ALREADY_EXISTS;
    case StatusCode::kOutOfRange: return STRATA_OUT_OF_RANGE;
    case StatusCode::kResourceExhausted: return STRATA_RESOURCE_EXHAUSTED;
    case StatusCode::kFailedPrecondition: return STRATA_FAILED_PRECONDITION;
    case StatusCode::kIoError: return STRATA_IO_ERROR;
    case StatusCode::kCorruption: return STRATA_CORRUPTION;
    case StatusCode::kNotSupported: return STRATA_NOT_SUPPORTED;
    case StatusCode::kTimeout: return STRATA_TIMEOUT;
    case StatusCode::kAborted: return STRATA_ABORTED;
    default: return STRATA_INTERNAL;
  }
}

strata_status Report(const Status& s) {
  if (s.ok()) {
    t_last_error.clear();
    return STRATA_OK;
  }
  t_last_error = strata::embed::InCApiTerms(s.message());
  return ToC(s.code());
}

strata_status Fail(strata_status code, const std::string& message) {
  t_last_error = message;
  return code;
}

// Runs `fn` (returning Status), turning any exception into STRATA_INTERNAL / RESOURCE_EXHAUSTED.
template <typename Fn>
strata_status Guard(Fn&& fn) {
  try {
    return Report(fn());
  } catch (const std::bad_alloc&) {
    return Fail(STRATA_RESOURCE_EXHAUSTED, "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return Fail(STRATA_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(STRATA_INTERNAL, "internal error: unknown exception");
  }
}

// Runs `fn(RuntimeRef&)` on the open runtime `runtime` names, inside Guard.
template <typename Fn>
strata_status WithRuntime(strata_runtime* runtime, const char* call, Fn&& fn) {
  if (runtime == nullptr) {
    return Fail(STRATA_INVALID_ARGUMENT, std::string(call) + ": runtime is NULL");
  }
  return Guard([&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(
        RuntimeRef ref, HandleTable::Process().find(reinterpret_cast<uintptr_t>(runtime), call));
    return fn(ref);
  });
}

// The index of the tensor `tensor` names, checked against `ref`'s runtime.
Status Index(const RuntimeRef& ref, strata_tensor tensor, const char* call, size_t* out) {
  const auto value = reinterpret_cast<uintptr_t>(tensor);
  STRATA_ASSIGN_OR_RETURN(uint64_t index, HandleTable::Process().tensor_index(value, ref.id, call));
  STRATA_RETURN_IF_ERROR(ref.runtime->check_tensor(size_t(index))
                             .with_context(std::string(call) + ": tensor handle " +
                                           strata::embed::HandleText(value)));
  *out = size_t(index);
  return Status::Ok();
}

strata_tensor ToHandle(const RuntimeRef& ref, size_t index) {
  return reinterpret_cast<strata_tensor>(strata::embed::TensorHandleValue(ref.id, index));
}

#define STRATA_NEED(ptr, what) \
  if ((ptr) == nullptr) return Fail(STRATA_INVALID_ARGUMENT, std::string(what) + " is NULL")

}  // namespace

extern "C" {

const char* strata_last_error(void) { return t_last_error.c_str(); }

const char* strata_status_name(strata_status status) {
  switch (status) {
    case STRATA_OK: return "STRATA_OK";
    case STRATA_INVALID_ARGUMENT: return "STRATA_INVALID_ARGUMENT";
    case STRATA_NOT_FOUND: return "STRATA_NOT_FOUND";
    case STRATA_ALREADY_EXISTS: return "STRATA_ALREADY_EXISTS";
    case STRATA_OUT_OF_RANGE: return "STRATA_OUT_OF_RANGE";
    case STRATA_RESOURCE_EXHAUSTED: return "STRATA_RESOURCE_EXHAUSTED";
    case STRATA_FAILED_PRECONDITION: return "STRATA_FAILED_PRECONDITION";
    case STRATA_IO_ERROR: return "STRATA_IO_ERROR";
    case STRATA_CORRUPTION: return "STRATA_CORRUPTION";
    case STRATA_NOT_SUPPORTED: return "STRATA_NOT_SUPPORTED";
    case STRATA_TIMEOUT: return "STRATA_TIMEOUT";
    case STRATA_ABORTED: return "STRATA_ABORTED";
    case STRATA_INTERNAL: return "STRATA_INTERNAL";
    case STRATA_STATUS_MAX_ENUM: break;
  }
  return "STRATA_UNKNOWN_STATUS";
}

const char* strata_version(void) { return "0.1.0"; }

strata_status strata_options_create(strata_options** out) {
  STRATA_NEED(out, "strata_options_create: out");
  return Guard([&] {
    *out = new strata_options;
    return Status::Ok();
  });
}

strata_status strata_options_set(strata_options* options, const char* key, const char* value) {
  STRATA_NEED(options, "strata_options_set: options");
  STRATA_NEED(key, "strata_options_set: key");
  STRATA_NEED(value, "strata_options_set: value");
  return Guard([&] { return options->values.set(key, value); });
}

void strata_options_destroy(strata_options* options) { delete options; }

strata_status strata_runtime_create(const strata_options* options, strata_runtime** out) {
  STRATA_NEED(options, "strata_runtime_create: options");
  STRATA_NEED(out, "strata_runtime_create: out");
  *out = nullptr;
  return Guard([&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(auto parsed, strata::embed::ParseOptions(options->values));
    STRATA_ASSIGN_OR_RETURN(auto rt, strata::embed::Runtime::Create(parsed));
    STRATA_ASSIGN_OR_RETURN(uint64_t id, HandleTable::Process().add(std::move(rt)));
    *out = reinterpret_cast<strata_runtime*>(strata::embed::RuntimeHandleValue(id));
    return Status::Ok();
  });
}

// The Runtime is destroyed when the last call holding it returns (this one, unless a call
// races the close, which strata.h forbids).
strata_status strata_runtime_close(strata_runtime* runtime) {
  if (runtime == nullptr) return Report(Status::Ok());
  return WithRuntime(runtime, "strata_runtime_close", [&](RuntimeRef& ref) -> Status {
    STRATA_RETURN_IF_ERROR(ref.runtime->close());
    HandleTable::Process().remove(ref.id);
    return Status::Ok();
  });
}

strata_status strata_register(strata_runtime* runtime, const char* name, uint64_t bytes,
                              strata_dtype dtype, strata_role role, const char* group,
                              strata_tensor* out) {
  STRATA_NEED(name, "strata_register: name");
  STRATA_NEED(out, "strata_register: out");
  if (unsigned(dtype) > STRATA_U8) return Fail(STRATA_INVALID_ARGUMENT, "strata_register: bad dtype");
  if (unsigned(role) > STRATA_ROLE_OTHER) {
    return Fail(STRATA_INVALID_ARGUMENT, "strata_register: bad role");
  }
  return WithRuntime(runtime, "strata_register", [&](RuntimeRef& ref) -> Status {
    STRATA_ASSIGN_OR_RETURN(size_t index,
                            ref.runtime->register_tensor({name, bytes, int(dtype), int(role),
                                                          group ? group : ""}));
    *out = ToHandle(ref, index);
    return Status::Ok();
  });
}

strata_status strata_find(strata_runtime* runtime, const char* name, strata_tensor* out) {
  STRATA_NEED(name, "strata_find: name");
  STRATA_NEED(out, "strata_find: out");
  return WithRuntime(runtime, "strata_find", [&](RuntimeRef& ref) -> Status {
    STRATA_ASSIGN_OR_RETURN(size_t index, ref.runtime->find(name));
    *out = ToHandle(ref, index);
    return Status::Ok();
  });
}

strata_status strata_acquire(strata_runtime* runtime, strata_tensor tensor, strata_intent intent,
                             strata_tier tier, void** out) {
  STRATA_NEED(out, "strata_acquire: out");
  *out = nullptr;
  if (unsigned(intent) > STRATA_OVERWRITE || unsigned(tier) > STRATA_TIER_HOST) {
    return Fail(STRATA_INVALID_ARGUMENT, "strata_acquire: bad intent or tier");
  }
  return WithRuntime(runtime, "strata_acquire", [&](RuntimeRef& ref) -> Status {
    size_t t;
    STRATA_RETURN_IF_ERROR(Index(ref, tensor, "strata_acquire", &t));
    STRATA_ASSIGN_OR_RETURN(*out, ref.runtime->acquire(t, intent, tier));
    return Status::Ok();
  });
}

#define STRATA_TENSOR_CALL(fn, method)                                      \
  strata_status fn(strata_runtime* runtime, strata_tensor tensor) {        \
    return WithRuntime(runtime, #fn, [&](RuntimeRef& ref) -> Status {       \
      size_t t;                                                             \
      STRATA_RETURN_IF_ERROR(Index(ref, tensor, #fn, &t));                  \
      return ref.runtime->method(t);                                        \
    });                                                                     \
  }
STRATA_TENSOR_CALL(strata_release, release)
STRATA_TENSOR_CALL(strata_prefetch, prefetch)
STRATA_TENSOR_CALL(strata_discard, discard)

strata_status strata_register_pair(strata_runtime* runtime, strata_tensor param,
                                   strata_tensor grad, float weight_decay) {
  if (!(weight_decay >= 0)) {
    return Fail(STRATA_INVALID_ARGUMENT, "strata_register_pair: weight_decay must be >= 0");
  }
  return WithRuntime(runtime, "strata_register_pair", [&](RuntimeRef& ref) -> Status {
    size_t p, g;
    STRATA_RETURN_IF_ERROR(Index(ref, param, "strata_register_pair: param", &p));
    STRATA_RETURN_IF_ERROR(Index(ref, grad, "strata_register_pair: grad", &g));
    return ref.runtime->register_pair(p, g, weight_decay);
  });
}

void strata_step_options_init(strata_step_options* options) {
  if (options == nullptr) return;
  *options = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
}

strata_status strata_step(strata_runtime* runtime, const strata_step_options* options) {
  STRATA_NEED(options, "strata_step: options");
  return WithRuntime(runtime, "strata_step",
                     [&](RuntimeRef& ref) { return ref.runtime->step(*options); });
}

strata_status strata_step_wait(strata_runtime* runtime) {
  return WithRuntime(runtime, "strata_step_wait",
                     [&](RuntimeRef& ref) { return ref.runtime->step_wait(); });
}

strata_status strata_step_count(strata_runtime* runtime, int64_t* out) {
  STRATA_NEED(out, "strata_step_count: out");
  return WithRuntime(runtime, "strata_step_count", [&](RuntimeRef& ref) {
    *out = ref.runtime->step_count();
    return Status::Ok();
  });
}

strata_status strata_last_grad_norm(strata_runtime* runtime, double* out) {
  STRATA_NEED(out, "strata_last_grad_norm: out");
  return WithRuntime(runtime, "strata_last_grad_norm", [&](RuntimeRef& ref) {
    *out = ref.runtime->last_grad_norm();
    return Status::Ok();
  });
}

strata_status strata_checkpoint(strata_runtime* runtime, const char* name) {
  STRATA_NEED(name, "strata_checkpoint: name");
  return WithRuntime(runtime, "strata_checkpoint",
                     [&](RuntimeRef& ref) { return ref.runtime->checkpoint(name); });
}

strata_status strata_checkpoint_drop(strata_runtime* runtime, const char* name) {
  STRATA_NEED(name, "strata_checkpoint_drop: name");
  return WithRuntime(runtime, "strata_checkpoint_drop",
                     [&](RuntimeRef& ref) { return ref.runtime->drop_checkpoint(name); });
}

strata_status strata_get_stats(strata_runtime* runtime, strata_stats* out) {
  STRATA_NEED(out, "strata_get_stats: out");
  return WithRuntime(runtime, "strata_get_stats", [&](RuntimeRef& ref) {
    *out = ref.runtime->stats();
    return Status::Ok();
  });
}

}  // extern "C"
