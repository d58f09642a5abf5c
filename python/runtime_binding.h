// PyRuntime: one strata_runtime (include/strata.h) as the Python class strata._C.Runtime.
//
// Only the public C API is used, so the package exercises exactly what an embedder links
// (libstrata.so). Every non-OK status becomes a StrataError, which strata_module.cc turns into
// the Python exception strata.Error carrying strata_last_error() and the status name.
//
// Threads: calls that may block (an acquire waiting for NVMe or the optimizer, step_wait,
// checkpoint, close) run with the GIL released, so another Python thread may call into the same
// runtime meanwhile. The C API allows concurrent calls except close, so `mu_` is taken shared by
// every call and exclusively by close; after close every call raises "runtime is closed".
#pragma once
#include <cstdint>
#include <shared_mutex>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include "strata.h"

namespace strata::python {

// A failed C call: the status and strata_last_error() read on the thread that made it.
struct StrataError {
  strata_status status;
  std::string message;
};

// A registered tensor as Python sees it. `runtime_id` ties it to the runtime that made it, so a
// tensor used with another runtime is refused here with its name (the C layer refuses it too,
// naming only the handle: Note [Handle table] in embed/handles.h).
struct PyTensor {
  strata_tensor handle = nullptr;
  uint64_t runtime_id = 0;
  std::string name;
  uint64_t bytes = 0;
  strata_dtype dtype = STRATA_F32;
  strata_role role = STRATA_ROLE_OTHER;
};

class PyRuntime {
 public:
  // `options`: (key, value) in order; a key may repeat (nvme_dir).
  explicit PyRuntime(const std::vector<std::pair<std::string, std::string>>& options);
  ~PyRuntime();  // closes, ignoring a failure (Python cannot be told from a destructor)
  PyRuntime(const PyRuntime&) = delete;
  PyRuntime& operator=(const PyRuntime&) = delete;

  PyTensor register_tensor(const std::string& name, uint64_t bytes, strata_dtype dtype,
                           strata_role role, const std::string* group);
  // A tensor registered through this object, by name (its size and dtype are known here; the C
  // API's strata_find returns only the handle).
  PyTensor find(const std::string& name);
  void register_pair(const PyTensor& param, const PyTensor& grad, float weight_decay);
  void* acquire(const PyTensor& tensor, strata_intent intent, strata_tier tier);
  void release(const PyTensor& tensor);
  void prefetch(const PyTensor& tensor);
  void discard(const PyTensor& tensor);
  void step(const strata_step_options& options);
  void step_wait();
  int64_t step_count();
  double last_grad_norm();
  void checkpoint(const std::string& name);
  void drop_checkpoint(const std::string& name);
  strata_stats stats();
  // Closes; a second close is a no-op. FAILED_PRECONDITION (still open) while a tensor is held.
  void close();
  bool closed();

 private:
  // Runs `call(runtime)` without the GIL under a shared lock; throws StrataError on failure.
  template <class Call>
  void invoke(Call&& call);
  strata_tensor check_owner(const PyTensor& tensor) const;

  strata_runtime* runtime_ = nullptr;
  uint64_t id_;
  std::shared_mutex mu_;
  std::mutex registry_mu_;
  std::unordered_map<std::string, PyTensor> registry_;
};

}  // namespace strata::python
