#include "scheduler/host_queue.h"

#include "core/util/thread_name.h"

namespace strata::scheduler {

HostQueue::HostQueue(std::string name) : name_(std::move(name)), thread_([this] {
      SetThreadName(name_);
      run();
    }) {}

HostQueue::~HostQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HostQueue::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void HostQueue::drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return jobs_.empty() && !running_; });
}

void HostQueue::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stop_ and nothing left
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    running_ = true;
    lock.unlock();
    job();
    lock.lock();
    running_ = false;
    if (jobs_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace strata::scheduler
