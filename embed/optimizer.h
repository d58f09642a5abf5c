// Optimizer: strata_step's AdamW, in the background, update unit by update unit.
//
// A step (one thread per step, joined by wait()) first computes the global gradient norm when
// clipping is on, and only then (every unit's gradient page read once, sums of squares per
// chunk added in chunk order), then updates the units in the order it is given (the embedder's
// last acquire order, so the first parameters needed are the first ready). Per unit it holds
// the four pages (Note [Update units] in layout.h), runs core/kernels/adamw.h's update on each
// chunk (torch.optim
// .AdamW's arithmetic, parallel inside a TBB arena of the runtime's thread count), releases
// them, drops the consumed gradients when asked, and tells the runtime the unit is done.
//
// Errors: the first failure ends the step; the remaining units are finished unchanged (their
// pages become available again) and marked failed, and wait() returns the error.
// Threads: start() and wait() from the runtime, under its discipline (one step at a time).
#pragma once
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>
#include "core/util/status.h"
#include "embed/layout.h"
#include "memory/memory_manager.h"
#include "strata.h"

namespace strata::embed {

class Runtime;

class Optimizer {
 public:
  Optimizer(Runtime* runtime, const Layout* layout, memory::MemoryManager* memory, int threads,
            int64_t steps_done);
  ~Optimizer();

  // Starts step steps_done()+1 over `unit_order` (every unit once). The previous step must
  // have been waited for. `sums` / `fresh`: the gradients' chunk sums known at release (Note
  // [Norms at release] in grad_sums.h); the norm reads only the pages of stale ones.
  void start(const strata_step_options& options, std::vector<size_t> unit_order,
             std::vector<double> sums, std::vector<char> fresh);
  // Waits for the running step (if any); returns the last step's status.
  Status wait();
  bool running() const { return thread_.joinable(); }
  // Whether unit `u` failed in the last step (its update did not happen).
  bool unit_failed(size_t u) const;
  Status last_status() const;
  int64_t steps_done() const;
  double last_grad_norm() const;
  uint64_t norm_page_reads() const;  // gradient pages the clipping norms have read

 private:
  void run(strata_step_options options, std::vector<size_t> order, int64_t step);
  Status global_norm(const std::vector<size_t>& order, double* norm);
  bool unit_is_stale(const UpdateUnit& unit) const;
  Status update_unit(size_t u, const strata_step_options& o, float scale, int64_t step);
  Status drop_gradients(size_t u);

  Runtime* runtime_;
  const Layout* layout_;
  memory::MemoryManager* memory_;
  int threads_;
  std::thread thread_;
  mutable std::mutex mu_;  // guards what follows (read by the runtime's threads)
  Status status_;
  std::vector<char> failed_;
  int64_t steps_done_ = 0;
  double last_norm_ = 0.0;
  uint64_t norm_page_reads_ = 0;
  // The step's known chunk sums (owned by the step's thread while it runs).
  std::vector<double> sums_;
  std::vector<char> fresh_;
};

}  // namespace strata::embed
