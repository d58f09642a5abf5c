#include "memory/worker_pool.h"

#include <algorithm>

#include "core/util/thread_name.h"

namespace strata::memory::internal {

WorkerPool::WorkerPool(uint32_t max_workers) : max_workers_(std::max<uint32_t>(1, max_workers)) {}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::submit(std::function<void()> task) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(task));
  if (idle_ < queue_.size() && threads_.size() < max_workers_) {
    threads_.emplace_back([this] {
      SetThreadName("mm-worker");
      run();
    });
  } else {
    cv_.notify_one();
  }
}

uint32_t WorkerPool::workers() const {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(threads_.size());
}

void WorkerPool::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stop_ and nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace strata::memory::internal
