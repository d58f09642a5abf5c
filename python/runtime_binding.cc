// PyRuntime (runtime_binding.h): each method is one C call, run by invoke().
#include "python/runtime_binding.h"

#include <pybind11/pybind11.h>

#include <atomic>
#include <mutex>

namespace strata::python {
namespace {

std::atomic<uint64_t> next_runtime_id{1};

// Options are parsed and checked by the C layer (strata_runtime_create), so its messages,
// which name the key, reach the user unchanged.
strata_status CreateRuntime(const std::vector<std::pair<std::string, std::string>>& options,
                            strata_runtime** out, std::string* message) {
  strata_options* opts = nullptr;
  strata_status status = strata_options_create(&opts);
  for (size_t i = 0; status == STRATA_OK && i < options.size(); ++i) {
    status = strata_options_set(opts, options[i].first.c_str(), options[i].second.c_str());
  }
  if (status == STRATA_OK) status = strata_runtime_create(opts, out);
  if (status != STRATA_OK) *message = strata_last_error();
  strata_options_destroy(opts);
  return status;
}

}  // namespace

PyRuntime::PyRuntime(const std::vector<std::pair<std::string, std::string>>& options)
    : id_(next_runtime_id++) {
  std::string message;
  strata_status status;
  {
    pybind11::gil_scoped_release nogil;  // opening NVMe files or resuming may take a while
    status = CreateRuntime(options, &runtime_, &message);
  }
  if (status != STRATA_OK) throw StrataError{status, message};
}

PyRuntime::~PyRuntime() {
  // A runtime dropped with tensors still held cannot close (the C API refuses); it is left to
  // the process's exit rather than freed under a pointer someone may still use.
  if (runtime_ != nullptr) strata_runtime_close(runtime_);
}

template <class Call>
void PyRuntime::invoke(Call&& call) {
  strata_status status;
  std::string message;
  {
    pybind11::gil_scoped_release nogil;
    std::shared_lock lock(mu_);
    if (runtime_ == nullptr) {
      status = STRATA_FAILED_PRECONDITION;
      message = "runtime is closed";
    } else {
      status = call(runtime_);
      // strata_last_error() is per thread: read it on the thread that made the call.
      if (status != STRATA_OK) message = strata_last_error();
    }
  }
  if (status != STRATA_OK) throw StrataError{status, message};
}

strata_tensor PyRuntime::check_owner(const PyTensor& tensor) const {
  if (tensor.runtime_id != id_) {
    throw StrataError{STRATA_INVALID_ARGUMENT,
                      "tensor '" + tensor.name + "' was registered with another runtime"};
  }
  return tensor.handle;
}

PyTensor PyRuntime::register_tensor(const std::string& name, uint64_t bytes, strata_dtype dtype,
                                    strata_role role, const std::string* group) {
  PyTensor t{nullptr, id_, name, bytes, dtype, role};
  const char* g = group != nullptr ? group->c_str() : nullptr;
  invoke([&](strata_runtime* rt) {
    return strata_register(rt, name.c_str(), bytes, dtype, role, g, &t.handle);
  });
  std::lock_guard lock(registry_mu_);
  registry_[name] = t;
  return t;
}

PyTensor PyRuntime::find(const std::string& name) {
  strata_tensor handle = nullptr;
  invoke([&](strata_runtime* rt) { return strata_find(rt, name.c_str(), &handle); });
  std::lock_guard lock(registry_mu_);
  auto it = registry_.find(name);
  if (it == registry_.end() || it->second.handle != handle) {
    throw StrataError{STRATA_INTERNAL, "tensor '" + name + "' was not registered through this "
                                       "Runtime object"};
  }
  return it->second;
}

void PyRuntime::register_pair(const PyTensor& param, const PyTensor& grad, float weight_decay) {
  strata_tensor p = check_owner(param), g = check_owner(grad);
  invoke([&](strata_runtime* rt) { return strata_register_pair(rt, p, g, weight_decay); });
  // The pair's moments were registered by the C layer (strata.h: "<param>.exp_avg", ...);
  // recorded here so that find() can return them with their size.
  for (const char* suffix : {".exp_avg", ".exp_avg_sq"}) {
    PyTensor m{nullptr, id_, param.name + suffix, param.bytes, STRATA_F32,
               STRATA_ROLE_OPTIMIZER_STATE};
    invoke([&](strata_runtime* rt) { return strata_find(rt, m.name.c_str(), &m.handle); });
    std::lock_guard lock(registry_mu_);
    registry_[m.name] = m;
  }
}

void* PyRuntime::acquire(const PyTensor& tensor, strata_intent intent, strata_tier tier) {
  strata_tensor t = check_owner(tensor);
  void* ptr = nullptr;
  invoke([&](strata_runtime* rt) { return strata_acquire(rt, t, intent, tier, &ptr); });
  return ptr;
}

void PyRuntime::release(const PyTensor& tensor) {
  strata_tensor t = check_owner(tensor);
  invoke([&](strata_runtime* rt) { return strata_release(rt, t); });
}

void PyRuntime::prefetch(const PyTensor& tensor) {
  strata_tensor t = check_owner(tensor);
  invoke([&](strata_runtime* rt) { return strata_prefetch(rt, t); });
}

void PyRuntime::discard(const PyTensor& tensor) {
  strata_tensor t = check_owner(tensor);
  invoke([&](strata_runtime* rt) { return strata_discard(rt, t); });
}

void PyRuntime::step(const strata_step_options& options) {
  invoke([&](strata_runtime* rt) { return strata_step(rt, &options); });
}

void PyRuntime::step_wait() {
  invoke([&](strata_runtime* rt) { return strata_step_wait(rt); });
}

int64_t PyRuntime::step_count() {
  int64_t n = 0;
  invoke([&](strata_runtime* rt) { return strata_step_count(rt, &n); });
  return n;
}

double PyRuntime::last_grad_norm() {
  double norm = 0;
  invoke([&](strata_runtime* rt) { return strata_last_grad_norm(rt, &norm); });
  return norm;
}

void PyRuntime::checkpoint(const std::string& name) {
  invoke([&](strata_runtime* rt) { return strata_checkpoint(rt, name.c_str()); });
}

void PyRuntime::drop_checkpoint(const std::string& name) {
  invoke([&](strata_runtime* rt) { return strata_checkpoint_drop(rt, name.c_str()); });
}

strata_stats PyRuntime::stats() {
  strata_stats s{};
  invoke([&](strata_runtime* rt) { return strata_get_stats(rt, &s); });
  return s;
}

void PyRuntime::close() {
  strata_status status = STRATA_OK;
  std::string message;
  {
    pybind11::gil_scoped_release nogil;  // waits for a running step
    std::unique_lock lock(mu_);          // no other call may race close (strata.h, Threads)
    if (runtime_ == nullptr) return;
    status = strata_runtime_close(runtime_);
    if (status == STRATA_OK) {
      runtime_ = nullptr;
    } else {
      message = strata_last_error();
    }
  }
  if (status != STRATA_OK) throw StrataError{status, message};
}

bool PyRuntime::closed() {
  std::shared_lock lock(mu_);
  return runtime_ == nullptr;
}

}  // namespace strata::python
