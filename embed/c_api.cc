// The C API (include/strata.h) over embed::Runtime: handles, status codes, the per-thread last
// error, and a catch of every C++ exception at the boundary.
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "embed/options.h"
#include "embed/runtime.h"
#include "strata.h"

struct strata_options {
  strata::embed::OptionValues values;
};

struct strata_runtime {
  std::unique_ptr<strata::embed::Runtime> rt;
};

namespace {

using strata::Status;
using strata::StatusCode;

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

// The layers below word some errors for strata's command line; an embedder set option keys.
std::string InOptionTerms(std::string message) {
  static constexpr std::pair<std::string_view, std::string_view> kTerms[] = {
      {"--nvme-dir", "nvme_dir"},   {"--nvme-mem", "nvme_mem"},   {"--host-mem", "host_mem"},
      {"--gpu-mem", "gpu_mem"},     {"--page-size", "page_size"}, {"--ckpt-dir", "checkpoint_dir"},
      {"--threads", "threads"},     {"--device", "device"}};
  for (const auto& [flag, key] : kTerms) {
    for (size_t at = message.find(flag); at != std::string::npos; at = message.find(flag, at)) {
      message.replace(at, flag.size(), key);
    }
  }
  return message;
}

strata_status Report(const Status& s) {
  if (s.ok()) {
    t_last_error.clear();
    return STRATA_OK;
  }
  t_last_error = InOptionTerms(s.message());
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

// Handles are index + 1, so that a null handle is never a tensor.
strata_tensor ToHandle(size_t index) {
  return reinterpret_cast<strata_tensor>(static_cast<uintptr_t>(index) + 1);
}

Status Index(strata_runtime* runtime, strata_tensor tensor, size_t* out) {
  const auto raw = reinterpret_cast<uintptr_t>(tensor);
  if (raw == 0) return Status::InvalidArgument("the tensor handle is NULL");
  *out = size_t(raw - 1);
  return runtime->rt->check_tensor(*out);
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
    *out = new strata_runtime{std::move(rt)};
    return Status::Ok();
  });
}

strata_status strata_runtime_close(strata_runtime* runtime) {
  if (runtime == nullptr) return Report(Status::Ok());
  return Guard([&]() -> Status {
    STRATA_RETURN_IF_ERROR(runtime->rt->close());
    delete runtime;
    return Status::Ok();
  });
}

strata_status strata_register(strata_runtime* runtime, const char* name, uint64_t bytes,
                              strata_dtype dtype, strata_role role, const char* group,
                              strata_tensor* out) {
  STRATA_NEED(runtime, "strata_register: runtime");
  STRATA_NEED(name, "strata_register: name");
  STRATA_NEED(out, "strata_register: out");
  if (unsigned(dtype) > STRATA_U8) return Fail(STRATA_INVALID_ARGUMENT, "strata_register: bad dtype");
  if (unsigned(role) > STRATA_ROLE_OTHER) {
    return Fail(STRATA_INVALID_ARGUMENT, "strata_register: bad role");
  }
  return Guard([&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(size_t index,
                            runtime->rt->register_tensor({name, bytes, int(dtype), int(role),
                                                          group ? group : ""}));
    *out = ToHandle(index);
    return Status::Ok();
  });
}

strata_status strata_find(strata_runtime* runtime, const char* name, strata_tensor* out) {
  STRATA_NEED(runtime, "strata_find: runtime");
  STRATA_NEED(name, "strata_find: name");
  STRATA_NEED(out, "strata_find: out");
  return Guard([&]() -> Status {
    STRATA_ASSIGN_OR_RETURN(size_t index, runtime->rt->find(name));
    *out = ToHandle(index);
    return Status::Ok();
  });
}

strata_status strata_acquire(strata_runtime* runtime, strata_tensor tensor, strata_intent intent,
                             strata_tier tier, void** out) {
  STRATA_NEED(runtime, "strata_acquire: runtime");
  STRATA_NEED(out, "strata_acquire: out");
  *out = nullptr;
  if (unsigned(intent) > STRATA_OVERWRITE || unsigned(tier) > STRATA_TIER_HOST) {
    return Fail(STRATA_INVALID_ARGUMENT, "strata_acquire: bad intent or tier");
  }
  return Guard([&]() -> Status {
    size_t t;
    STRATA_RETURN_IF_ERROR(Index(runtime, tensor, &t));
    STRATA_ASSIGN_OR_RETURN(*out, runtime->rt->acquire(t, intent, tier));
    return Status::Ok();
  });
}

#define STRATA_TENSOR_CALL(fn, method)                                      \
  strata_status fn(strata_runtime* runtime, strata_tensor tensor) {        \
    STRATA_NEED(runtime, #fn ": runtime");                                  \
    return Guard([&]() -> Status {                                          \
      size_t t;                                                             \
      STRATA_RETURN_IF_ERROR(Index(runtime, tensor, &t));                   \
      return runtime->rt->method(t);                                        \
    });                                                                     \
  }
STRATA_TENSOR_CALL(strata_release, release)
STRATA_TENSOR_CALL(strata_prefetch, prefetch)
STRATA_TENSOR_CALL(strata_discard, discard)

strata_status strata_register_pair(strata_runtime* runtime, strata_tensor param,
                                   strata_tensor grad, float weight_decay) {
  STRATA_NEED(runtime, "strata_register_pair: runtime");
  if (!(weight_decay >= 0)) {
    return Fail(STRATA_INVALID_ARGUMENT, "strata_register_pair: weight_decay must be >= 0");
  }
  return Guard([&]() -> Status {
    size_t p, g;
    STRATA_RETURN_IF_ERROR(Index(runtime, param, &p));
    STRATA_RETURN_IF_ERROR(Index(runtime, grad, &g));
    return runtime->rt->register_pair(p, g, weight_decay);
  });
}

void strata_step_options_init(strata_step_options* options) {
  if (options == nullptr) return;
  *options = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
}

strata_status strata_step(strata_runtime* runtime, const strata_step_options* options) {
  STRATA_NEED(runtime, "strata_step: runtime");
  STRATA_NEED(options, "strata_step: options");
  return Guard([&] { return runtime->rt->step(*options); });
}

strata_status strata_step_wait(strata_runtime* runtime) {
  STRATA_NEED(runtime, "strata_step_wait: runtime");
  return Guard([&] { return runtime->rt->step_wait(); });
}

strata_status strata_step_count(strata_runtime* runtime, int64_t* out) {
  STRATA_NEED(runtime, "strata_step_count: runtime");
  STRATA_NEED(out, "strata_step_count: out");
  return Guard([&] {
    *out = runtime->rt->step_count();
    return Status::Ok();
  });
}

strata_status strata_last_grad_norm(strata_runtime* runtime, double* out) {
  STRATA_NEED(runtime, "strata_last_grad_norm: runtime");
  STRATA_NEED(out, "strata_last_grad_norm: out");
  return Guard([&] {
    *out = runtime->rt->last_grad_norm();
    return Status::Ok();
  });
}

strata_status strata_checkpoint(strata_runtime* runtime, const char* name) {
  STRATA_NEED(runtime, "strata_checkpoint: runtime");
  STRATA_NEED(name, "strata_checkpoint: name");
  return Guard([&] { return runtime->rt->checkpoint(name); });
}

strata_status strata_get_stats(strata_runtime* runtime, strata_stats* out) {
  STRATA_NEED(runtime, "strata_get_stats: runtime");
  STRATA_NEED(out, "strata_get_stats: out");
  return Guard([&] {
    *out = runtime->rt->stats();
    return Status::Ok();
  });
}

}  // extern "C"
