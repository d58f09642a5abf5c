#include "scheduler/serial_job_thread.h"

#include "core/util/thread_name.h"

namespace strata::scheduler {

SerialJobThread::SerialJobThread(std::string name)
    : name_(std::move(name)), thread_([this] {
        SetThreadName(name_);
        run();
      }) {}

SerialJobThread::~SerialJobThread() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SerialJobThread::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void SerialJobThread::drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return jobs_.empty() && !running_; });
}

void SerialJobThread::run() {
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
