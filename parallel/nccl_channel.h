// NcclChannel: one NCCL communicator with its CUDA stream, and NcclWork, the CommWork state of
// an op enqueued on that stream. Internal to the NCCL backend (nccl_comm_cuda.cc); only compiled
// with STRATA_WITH_NCCL.
//
// Ownership: the NcclComm and every NcclWork it hands out share the channel, so that a work
// waited on after its Comm is gone still has a stream and a communicator to ask.
// Concurrency: mu_ guards failure_ and the communicator's destruction or abort; the other
// members are immutable after construction.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include "core/util/status.h"
#include "parallel/op_status.h"
#include "parallel/work_state.h"

namespace strata::parallel {

// OK for cudaSuccess / ncclSuccess; otherwise kAborted "<what>: <the library's error string>".
Status CudaStatus(cudaError_t code, const char* what);
Status NcclStatus(ncclResult_t code, const char* what);

class NcclChannel {
 public:
  NcclChannel(int device, int rank, int size, cudaStream_t stream, ncclComm_t comm,
              double timeout_s);
  // Waits (up to the timeout) for the stream, then destroys the communicator, or aborts it if
  // the stream did not drain or an op failed.
  ~NcclChannel();
  NcclChannel(const NcclChannel&) = delete;
  NcclChannel& operator=(const NcclChannel&) = delete;

  int device() const { return device_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  cudaStream_t stream() const { return stream_; }
  ncclComm_t comm() const { return comm_; }
  double timeout_s() const { return timeout_s_; }

  // Polls `event` until it completes (OK), NCCL reports an asynchronous error, or timeout_s
  // passes from now; a failure is recorded (fail) and returned, worded for `op`.
  Status wait_event(cudaEvent_t event, const OpInfo& op);
  // Records the first failure and aborts the communicator, which ends whatever NCCL kernels the
  // stream is blocked in. Idempotent: later failures keep the first.
  void fail(const Status& failure);
  // The first failure, or OK.
  Status failure() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::optional<Status> poll_event(cudaEvent_t event, const OpInfo& op, Clock::time_point deadline);
  bool stream_drained();

  const int device_;
  const int rank_;
  const int size_;
  const cudaStream_t stream_;
  const ncclComm_t comm_;
  const Clock::duration timeout_;
  const double timeout_s_;
  mutable std::mutex mu_;
  Status failure_;        // guarded by mu_
  bool aborted_ = false;  // guarded by mu_: comm_ was aborted (and must not be destroyed)
};

// The WorkState of one op: the CUDA event recorded after it on the channel's stream. The first
// wait() polls; its outcome is kept for every later wait(). mu_ serializes waiters.
class NcclWork final : public WorkState {
 public:
  // Takes ownership of `event`.
  NcclWork(std::shared_ptr<NcclChannel> channel, cudaEvent_t event, const OpInfo& op);
  ~NcclWork() override;

  Status wait() override;
  bool done() const override;

 private:
  const std::shared_ptr<NcclChannel> channel_;
  const cudaEvent_t event_;
  const OpInfo op_;
  mutable std::mutex mu_;
  bool finished_ = false;  // guarded by mu_
  Status outcome_;         // guarded by mu_
};

}  // namespace strata::parallel
