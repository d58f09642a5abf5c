// The cuda backend's Stream and Event (device.h). Included only by .cu files.
//
// Note [CUDA streams with a host thread]
// Each CudaStream owns a cudaStream_t and one host thread (its worker) that takes the stream's
// operations in submission order: copy_async issues cudaMemcpyAsync, record cudaEventRecord,
// wait cudaStreamWaitEvent, and launch(fn) first waits until everything before it on the stream
// has completed, then runs fn there with the stream as the thread's current launch
// (cuda_launch.h), so that fn's kernel-table calls enqueue their kernels on this stream. That
// keeps device.h's contract of launch ("runs in stream order", host code included) and lets
// kernels be enqueued from it, which a cudaLaunchHostFunc callback may not do (CUDA forbids
// CUDA calls there).
//
// Events are recorded by the worker, later than record() returns, so a CudaEvent counts records
// asked (record()) and issued (by the worker). A wait() or host synchronize() first waits until
// the record asked before it has been issued, then uses CUDA's own wait. A wait captures the
// count when it is called, as CUDA captures the last record, so waits never form a cycle:
// the record it waits for was submitted before the wait.
//
// Errors are sticky per stream (ErrorSlot): after the first, launches and copies are skipped,
// while records and waits still go through so that no other stream or host thread hangs.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/device/cuda_launch.h"
#include "core/device/device.h"

namespace strata::cuda {

// The first error of one stream; shared by the stream, its worker and the device.
class ErrorSlot {
 public:
  void set(const Status& status);
  Status get();
  bool failed();

 private:
  std::mutex mu_;
  Status first_;
};

// An event's CUDA handle and its record counts; shared by the Event and the work that uses it,
// so the Event may be destroyed while a record or wait on it is still queued.
class EventState {
 public:
  EventState(int ordinal, cudaEvent_t event) : ordinal_(ordinal), event_(event) {}
  ~EventState();
  cudaEvent_t handle() const { return event_; }
  int ordinal() const { return ordinal_; }
  // Held by record() from taking its number until its op is queued, and by wait() while it
  // reads the count and queues its op: a record a wait sees is already in its stream's queue.
  std::mutex& order_mu() { return order_mu_; }
  uint64_t ask_record();            // record() was called; returns its number
  void issued(uint64_t number);     // the worker has issued record `number`
  uint64_t asked();                 // records asked so far (0: never recorded)
  void wait_issued(uint64_t number);  // blocks until record `number` is issued
  bool all_issued();

 private:
  const int ordinal_;
  const cudaEvent_t event_;
  std::mutex order_mu_;
  std::mutex mu_;  // guards the counts; never held while taking order_mu_
  std::condition_variable cv_;
  uint64_t asked_ = 0;
  uint64_t issued_ = 0;
};

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(std::shared_ptr<EventState> state) : state_(std::move(state)) {}
  void synchronize() override;
  bool query() override;
  const std::shared_ptr<EventState>& state() const { return state_; }

 private:
  std::shared_ptr<EventState> state_;
};

class CudaStream final : public Stream {
 public:
  // `owner` identifies the device for copy_async's check; `on_destroy` unregisters the stream
  // from it, first thing in the destructor.
  CudaStream(const void* owner, int ordinal, std::string name, std::shared_ptr<ErrorSlot> error,
             std::function<void(CudaStream*)> on_destroy);
  ~CudaStream() override;

  const std::string& name() const override { return name_; }
  void launch(std::function<void()> fn) override;
  void record(Event& event) override;
  void wait(Event& event) override;
  Status synchronize() override;

  // Enqueues cudaMemcpyAsync (the device checked the pointers).
  void copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
  const void* owner() const { return owner_; }

 private:
  void submit(std::function<void()> op);
  void run_worker();

  const void* const owner_;
  const int ordinal_;
  const std::string name_;
  std::shared_ptr<ErrorSlot> error_;
  std::function<void(CudaStream*)> on_destroy_;
  Launch launch_;  // the worker's current launch

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;  // last: starts once the members above exist
};

CudaEvent& AsCuda(Event& event);

}  // namespace strata::cuda
