#include "core/device/cuda_stream.h"

#include <exception>
#include <future>
#include <utility>

#include "core/device/cuda_status.h"
#include "core/util/check.h"

namespace strata::cuda {
namespace {

// The launch of the stream whose worker this thread is (nullptr on every other thread). Per
// thread by design, like PyTorch's current stream (Note [CUDA kernels on the stream's thread]).
thread_local const Launch* t_current_launch = nullptr;

void FailSlot(void* slot, const std::string& message) {
  static_cast<ErrorSlot*>(slot)->set(Status::Internal(message));
}

}  // namespace

const Launch& CurrentLaunch() {
  STRATA_CHECK(t_current_launch != nullptr)
      << "a CUDA kernel-table entry was called outside a cuda stream's launch(); call kernels "
         "only from functions given to Stream::launch of the cuda device";
  return *t_current_launch;
}

bool CheckCuda(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return true;
  const Launch& l = CurrentLaunch();
  l.fail(l.slot, CudaStatus(err, "stream '" + l.stream_name + "': " + what).message());
  return false;
}

bool CheckBlas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  const Launch& l = CurrentLaunch();
  l.fail(l.slot, BlasStatus(status, "stream '" + l.stream_name + "': " + what).message());
  return false;
}

StreamScratch::StreamScratch(size_t bytes, const char* what) {
  stream_ = CurrentLaunch().stream;
  if (bytes == 0) return;
  if (!CheckCuda(cudaMallocAsync(&ptr_, bytes, stream_), what)) ptr_ = nullptr;
}

StreamScratch::~StreamScratch() {
  if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);  // fails only with a dead context
}

void ErrorSlot::set(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (first_.ok() && !status.ok()) first_ = status;
}

Status ErrorSlot::get() {
  std::lock_guard<std::mutex> lock(mu_);
  return first_;
}

bool ErrorSlot::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !first_.ok();
}

EventState::~EventState() {
  cudaSetDevice(ordinal_);
  cudaEventDestroy(event_);  // CUDA releases it once queued work on it is done
}

uint64_t EventState::ask_record() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++asked_;
}

void EventState::issued(uint64_t number) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (number > issued_) issued_ = number;
  }
  cv_.notify_all();
}

uint64_t EventState::asked() {
  std::lock_guard<std::mutex> lock(mu_);
  return asked_;
}

void EventState::wait_issued(uint64_t number) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return issued_ >= number; });
}

bool EventState::all_issued() {
  std::lock_guard<std::mutex> lock(mu_);
  return issued_ >= asked_;
}

// A failure (dead context) returns at once; the stream's synchronize reports it.
void CudaEvent::synchronize() {
  state_->wait_issued(state_->asked());
  cudaSetDevice(state_->ordinal());
  cudaEventSynchronize(state_->handle());
}

bool CudaEvent::query() {
  if (!state_->all_issued()) return false;
  cudaSetDevice(state_->ordinal());
  // cudaErrorNotReady is the only "not yet"; any other error means the work is over.
  return cudaEventQuery(state_->handle()) != cudaErrorNotReady;
}

CudaEvent& AsCuda(Event& event) {
  auto* cuda = dynamic_cast<CudaEvent*>(&event);
  STRATA_CHECK(cuda != nullptr) << "an Event of another backend used on a cuda stream";
  return *cuda;
}

CudaStream::CudaStream(const void* owner, int ordinal, std::string name,
                       std::shared_ptr<ErrorSlot> error,
                       std::function<void(CudaStream*)> on_destroy)
    : owner_(owner), ordinal_(ordinal), name_(std::move(name)), error_(std::move(error)),
      on_destroy_(std::move(on_destroy)) {
  // The interface has no error path here: running out of streams or cuBLAS handles is not
  // something a user can cause with flags, so both are invariants.
  cudaSetDevice(ordinal_);
  const Status created =
      CudaStatus(cudaStreamCreateWithFlags(&launch_.stream, cudaStreamNonBlocking),
                 "cudaStreamCreate '" + name_ + "'");
  STRATA_CHECK(created.ok()) << created.to_string();
  const Status blas = BlasStatus(Cublas().cublasCreate_v2(&launch_.blas),
                                 "cublasCreate for stream '" + name_ + "'");
  STRATA_CHECK(blas.ok()) << blas.to_string();
  // One handle per stream, bound to it: cuBLAS is then deterministic without a shared
  // workspace. Default math keeps fp32 GEMMs in fp32 (no TF32).
  Cublas().cublasSetStream_v2(launch_.blas, launch_.stream);
  Cublas().cublasSetMathMode(launch_.blas, CUBLAS_DEFAULT_MATH);
  launch_.fail = &FailSlot;
  launch_.slot = error_.get();
  launch_.stream_name = name_;
  worker_ = std::thread([this] { run_worker(); });
}

CudaStream::~CudaStream() {
  on_destroy_(this);  // first: the device's synchronize no longer reaches this stream
  // Like the sim backend, destroying a stream lets its queued work finish first.
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
  cudaSetDevice(ordinal_);
  cudaStreamSynchronize(launch_.stream);
  Cublas().cublasDestroy_v2(launch_.blas);
  cudaStreamDestroy(launch_.stream);
}

void CudaStream::submit(std::function<void()> op) {
  STRATA_CHECK(std::this_thread::get_id() != worker_.get_id())
      << "stream '" << name_ << "': work submitted from its own launch(); submit from outside";
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
}

void CudaStream::run_worker() {
  cudaSetDevice(ordinal_);
  t_current_launch = &launch_;
  for (;;) {
    std::function<void()> op;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and everything submitted has run
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    op();
  }
  t_current_launch = nullptr;
}

void CudaStream::launch(std::function<void()> fn) {
  submit([this, fn = std::move(fn)] {
    if (error_->failed()) return;  // sticky: later launches are skipped, as on the sim device
    Status status = CudaStatus(cudaStreamSynchronize(launch_.stream),
                               "stream '" + name_ + "': cudaStreamSynchronize before a launch");
    if (!status.ok()) return error_->set(status);
    try {
      fn();
    } catch (const std::exception& e) {
      return error_->set(
          Status::Internal("stream '" + name_ + "': launched function threw: " + e.what()));
    } catch (...) {
      return error_->set(Status::Internal("stream '" + name_ + "': launched function threw"));
    }
    // A kernel that failed to launch (bad configuration) reports here; faults while running
    // surface at the next synchronize.
    error_->set(CudaStatus(cudaGetLastError(), "stream '" + name_ + "': a kernel launch"));
  });
}

void CudaStream::copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  submit([this, dst, src, bytes, kind] {
    if (error_->failed()) return;
    error_->set(CudaStatus(cudaMemcpyAsync(dst, src, bytes, kind, launch_.stream),
                           "stream '" + name_ + "': cudaMemcpyAsync of " +
                               std::to_string(bytes) + " bytes"));
  });
}

void CudaStream::record(Event& event) {
  std::shared_ptr<EventState> state = AsCuda(event).state();
  std::lock_guard<std::mutex> order(state->order_mu());
  const uint64_t number = state->ask_record();
  submit([this, state, number] {
    error_->set(CudaStatus(cudaEventRecord(state->handle(), launch_.stream),
                           "stream '" + name_ + "': cudaEventRecord"));
    state->issued(number);  // even on error, so that no waiter hangs
  });
}

void CudaStream::wait(Event& event) {
  std::shared_ptr<EventState> state = AsCuda(event).state();
  std::lock_guard<std::mutex> order(state->order_mu());
  const uint64_t number = state->asked();
  if (number == 0) return;  // never recorded: complete, as in CUDA
  submit([this, state, number] {
    state->wait_issued(number);
    error_->set(CudaStatus(cudaStreamWaitEvent(launch_.stream, state->handle(), 0),
                           "stream '" + name_ + "': cudaStreamWaitEvent"));
  });
}

Status CudaStream::synchronize() {
  std::promise<void> drained;
  submit([this, &drained] {
    error_->set(CudaStatus(cudaStreamSynchronize(launch_.stream),
                           "stream '" + name_ + "': cudaStreamSynchronize"));
    drained.set_value();
  });
  drained.get_future().wait();
  return error_->get();
}

}  // namespace strata::cuda
