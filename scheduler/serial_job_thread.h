// SerialJobThread: one host thread that runs jobs in submission order — the Engine's optimizer
// queue (AdamW over TBB on the host, with its page traffic). A job that must wait for device work
// synchronizes on that work's Event itself.
//
// Threads: submit() and drain() from any thread; mu_ guards the queue and the idle flag. The
// destructor runs every queued job, then joins the thread. Jobs must not submit-and-wait on
// their own queue.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace strata::scheduler {

class SerialJobThread {
 public:
  explicit SerialJobThread(std::string name);
  ~SerialJobThread();
  SerialJobThread(const SerialJobThread&) = delete;
  SerialJobThread& operator=(const SerialJobThread&) = delete;

  const std::string& name() const { return name_; }
  void submit(std::function<void()> job);
  // Blocks until every job submitted so far has run.
  void drain();

 private:
  void run();

  const std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;       // new job or stop
  std::condition_variable idle_cv_;  // queue empty and no job running
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace strata::scheduler
