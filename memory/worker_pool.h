// WorkerPool (internal to memory/): an elastic pool of threads that run blocking tasks (page
// misses wait for frames and moves). A task submitted when no worker is idle starts a new
// worker, up to max_workers; beyond that tasks queue. Idle workers stay for reuse.
// Threads: submit() from any thread; mu_ guards the queue and the counters. The destructor
// runs every queued task, then joins the workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::memory::internal {

class WorkerPool {
 public:
  explicit WorkerPool(uint32_t max_workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void submit(std::function<void()> task);
  uint32_t workers() const;

 private:
  void run();

  const uint32_t max_workers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  uint32_t idle_ = 0;
  bool stop_ = false;
};

}  // namespace strata::memory::internal
