// The sim device's streams and events (internal to core/device/; the contract is Device's in
// device.h and the sim's in sim_device.h): a stream is a queue run in order by one worker thread,
// an event a series of fences, and each direction of the PCIe link a modelled clock (Note [Sim
// link throttle] in sim_device.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/device/sim_device.h"

namespace strata {
namespace sim_internal {

using Clock = std::chrono::steady_clock;

// One direction of the simulated PCIe link. Thread-safe: all members are guarded by mu_.
class Link {
 public:
  explicit Link(double gbps) : ns_per_byte_(1.0 / gbps) {}

  // Reserves the link for a transfer of `bytes` that may start at `ready` (when it was issued
  // and its stream predecessor finished, in modelled time) and returns its modelled end. The
  // start is max(ready, end of the previous transfer): a late wake-up of a worker thread is
  // not idle time of the link, so it does not slow the modelled rate.
  Clock::time_point reserve(uint64_t bytes, Clock::time_point ready);

 private:
  const double ns_per_byte_;  // 1 / (GB/s) == ns per byte
  std::mutex mu_;
  Clock::time_point free_at_{};
  double carry_ns_ = 0.0;
};

// Fence: one recording of an Event. Signalled once by the recording stream's worker.
class Fence {
 public:
  void signal();
  void wait();
  bool query();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// One queued operation. `run` gets the modelled time at which it may start (the later of its
// enqueue time and the modelled end of its stream predecessor) and may set `done` to its
// modelled end; left unset, the op ends when run returns.
struct Op {
  std::function<Status(Clock::time_point ready, Clock::time_point& done)> run;
  Clock::time_point enqueued;
  // Launches and copies are skipped once the stream has failed (sticky error, as on CUDA);
  // event records and waits still run so that nothing waiting on this stream deadlocks.
  bool skip_after_error = true;
};

// The queue and worker thread of one stream. Shared by the SimStream handle and the device's
// stream list (for Device::synchronize), so it outlives whichever lets go last.
// Concurrency: queue_, submitted_, completed_, error_ and stop_ are guarded by mu_; the worker
// runs ops without holding it.
class StreamCore {
 public:
  explicit StreamCore(std::string name);
  ~StreamCore() { shutdown(); }

  const std::string& name() const { return name_; }

  void enqueue(Op op);
  Status synchronize();
  // Runs what is queued, then stops and joins the worker. Idempotent.
  void shutdown();

 private:
  void run_worker();

  const std::string name_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Op> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  Status error_;
  bool stop_ = false;
  Clock::time_point last_done_{};  // modelled end of the last op; only the worker touches it
  std::thread worker_;  // last: started after every other member is constructed
};

}  // namespace sim_internal

class SimEvent final : public Event {
 public:
  void synchronize() override;
  bool query() override;

  // A new recording: later synchronize/query/wait calls refer to it (as cudaEventRecord).
  std::shared_ptr<sim_internal::Fence> start_recording();
  // The most recent recording, or nullptr when never recorded.
  std::shared_ptr<sim_internal::Fence> latest();

 private:
  std::mutex mu_;  // guards latest_
  std::shared_ptr<sim_internal::Fence> latest_;
};

class SimStream final : public Stream {
 public:
  SimStream(SimDevice* device, std::shared_ptr<sim_internal::StreamCore> core)
      : device_(device), core_(std::move(core)) {}
  ~SimStream() override;

  const std::string& name() const override { return core_->name(); }

  void launch(std::function<void()> fn) override;
  void record(Event& event) override;
  void wait(Event& event) override;
  Status synchronize() override { return core_->synchronize(); }

  SimDevice* device() const { return device_; }
  sim_internal::StreamCore& core() { return *core_; }

 private:
  static SimEvent& as_sim(Event& event);

  SimDevice* const device_;
  std::shared_ptr<sim_internal::StreamCore> core_;
};

}  // namespace strata
