#ifdef STRATA_WITH_NCCL

#include <algorithm>
#include <optional>
#include <string>
#include <thread>

#include "core/util/log.h"
#include "parallel/nccl_channel.h"

namespace strata::parallel {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kMaxTimeoutS = 1e9;  // about 30 years: "never", without overflowing the clock
constexpr int kYieldPolls = 2000;     // then sleep between polls, leaving the core to others
constexpr auto kPollSleep = std::chrono::microseconds(50);

void Backoff(int polls) {
  if (polls < kYieldPolls) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(kPollSleep);
  }
}

}  // namespace

Status CudaStatus(cudaError_t code, const char* what) {
  if (code == cudaSuccess) return Status::Ok();
  return Status::Aborted(std::string(what) + ": " + cudaGetErrorString(code));
}

Status NcclStatus(ncclResult_t code, const char* what) {
  if (code == ncclSuccess) return Status::Ok();
  return Status::Aborted(std::string(what) + ": " + ncclGetErrorString(code));
}

NcclChannel::NcclChannel(int device, int rank, int size, cudaStream_t stream, ncclComm_t comm,
                         double timeout_s)
    : device_(device),
      rank_(rank),
      size_(size),
      stream_(stream),
      comm_(comm),
      timeout_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(std::min(timeout_s, kMaxTimeoutS)))),
      timeout_s_(timeout_s) {}

NcclChannel::~NcclChannel() {
  cudaSetDevice(device_);
  const bool drained = stream_drained();
  {
    std::lock_guard lock(mu_);
    if (!aborted_) {
      // Destroying a communicator with work in flight could wait forever for a dead peer.
      if (drained && failure_.ok()) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
  }
  cudaStreamDestroy(stream_);
}

bool NcclChannel::stream_drained() {
  const Clock::time_point deadline = Clock::now() + timeout_;
  for (int polls = 0;; ++polls) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return true;
    if (state != cudaErrorNotReady || Clock::now() >= deadline) return false;
    Backoff(polls);
  }
}

Status NcclChannel::wait_event(cudaEvent_t event, const OpInfo& op) {
  const Clock::time_point deadline = Clock::now() + timeout_;
  for (int polls = 0;; ++polls) {
    std::optional<Status> outcome = poll_event(event, op, deadline);
    if (outcome) {
      if (!outcome->ok()) fail(*outcome);
      return *outcome;
    }
    Backoff(polls);
  }
}

// OK when the event completed; nullopt while it has not and time is left; the op's error
// otherwise. Under mu_, so that comm_ is not aborted while it is asked.
std::optional<Status> NcclChannel::poll_event(cudaEvent_t event, const OpInfo& op,
                                              Clock::time_point deadline) {
  std::lock_guard lock(mu_);
  // After a failure the communicator is aborted: an event that completes now marks kernels
  // that were cut short, not a result. (An op that finished before the failure but is waited
  // on after it is reported as not run too.)
  if (!failure_.ok()) return OpNotRun(op, rank_, size_, failure_);
  const cudaError_t state = cudaEventQuery(event);
  if (state == cudaSuccess) return Status::Ok();
  if (state != cudaErrorNotReady) {
    return OpFailed(op, rank_, size_, CudaStatus(state, "cudaEventQuery"));
  }
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm_, &async);
  if (async != ncclSuccess && async != ncclInProgress) {
    return OpFailed(op, rank_, size_, NcclStatus(async, "NCCL"));
  }
  if (Clock::now() >= deadline) return OpTimeout(op, rank_, size_, timeout_s_);
  return std::nullopt;
}

void NcclChannel::fail(const Status& failure) {
  std::lock_guard lock(mu_);
  if (failure_.ok()) {
    failure_ = failure;
    Logger("parallel")->error("{}", failure.message());
  }
  if (!aborted_) {
    ncclCommAbort(comm_);
    aborted_ = true;
  }
}

Status NcclChannel::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

NcclWork::NcclWork(std::shared_ptr<NcclChannel> channel, cudaEvent_t event, const OpInfo& op)
    : channel_(std::move(channel)), event_(event), op_(op) {}

NcclWork::~NcclWork() { cudaEventDestroy(event_); }

Status NcclWork::wait() {
  std::lock_guard lock(mu_);
  if (!finished_) {
    cudaSetDevice(channel_->device());
    outcome_ = channel_->wait_event(event_, op_);
    finished_ = true;
  }
  return outcome_;
}

bool NcclWork::done() const {
  std::lock_guard lock(mu_);
  return finished_ || cudaEventQuery(event_) != cudaErrorNotReady;
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_NCCL
