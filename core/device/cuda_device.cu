// The `cuda` backend of Device (device.h). Compiled by nvcc as C++17 (CMake 3.25 has no CUDA20
// dialect), so it includes only C++17-clean headers: device.h (with kernel_table.h and adamw.h),
// device_accounting.h, status.h, sizes.h.
//
// Kernels: kernels() returns CudaKernelTable(), whose entries are all nullptr until the CUDA
// backend work fills them in.
//
// Memory: each alloc is one cudaMalloc, accounted against the --gpu-mem budget before CUDA is
// asked (the budget is hard even when the GPU has more). cudaMalloc guarantees only 256-byte
// alignment; a block that is not kDeviceAlignment-aligned is re-requested with one alignment
// unit of slack and the returned pointer is aligned up (the slack is not charged to the budget).
// Streams are non-blocking cudaStreams, events cudaEvents without timing, launch a
// cudaLaunchHostFunc callback. Copy byte counters count copies when they are enqueued.
//
// Threads: CUDA's current device is per host thread, so every method that calls CUDA first
// makes this device current. The live-allocation map and memory stats are guarded by mu_
// (alloc/free exclusive, is_device_memory/stats shared); the stream list by streams_mu_; each
// stream's sticky error by its ErrorSlot's mutex (host callbacks run on a CUDA-owned thread).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/device/device.h"
#include "core/device/device_accounting.h"
#include "core/util/sizes.h"

namespace strata {
namespace {

// The one place a cudaError_t becomes a Status.
Status CudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return Status::Ok();
  std::string msg =
      what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  switch (err) {
    case cudaErrorMemoryAllocation: return Status::ResourceExhausted(std::move(msg));
    case cudaErrorInvalidValue: return Status::InvalidArgument(std::move(msg));
    case cudaErrorHostMemoryAlreadyRegistered: return Status::AlreadyExists(std::move(msg));
    case cudaErrorHostMemoryNotRegistered: return Status::NotFound(std::move(msg));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return Status::NotSupported(std::move(msg));
    default: return Status::Internal(std::move(msg));
  }
}

uint64_t RoundUp(uint64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

// The first error of one stream; shared by the stream, its host callbacks and the device.
class ErrorSlot {
 public:
  void set(const Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_.ok() && !status.ok()) first_ = status;
  }
  Status get() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !first_.ok();
  }

 private:
  std::mutex mu_;
  Status first_;
};

class CudaEvent final : public Event {
 public:
  CudaEvent(int ordinal, cudaEvent_t event) : ordinal_(ordinal), event_(event) {}
  ~CudaEvent() override {
    cudaSetDevice(ordinal_);
    cudaEventDestroy(event_);  // an error here means a dead context; nothing left to release
  }
  // A failure (dead context) returns at once; the stream's synchronize reports it.
  void synchronize() override {
    cudaSetDevice(ordinal_);
    cudaEventSynchronize(event_);
  }
  bool query() override {
    cudaSetDevice(ordinal_);
    // cudaErrorNotReady is the only "not yet"; any other error means the work is over.
    return cudaEventQuery(event_) != cudaErrorNotReady;
  }
  cudaEvent_t handle() const { return event_; }

 private:
  const int ordinal_;
  const cudaEvent_t event_;
};

CudaEvent& AsCuda(Event& event) {
  auto* cuda = dynamic_cast<CudaEvent*>(&event);
  STRATA_CHECK(cuda != nullptr) << "an Event of another backend used on a cuda stream";
  return *cuda;
}

// What a launch hands to its host callback; the callback owns and deletes it.
struct HostTask {
  std::function<void()> fn;
  std::shared_ptr<ErrorSlot> error;
  std::string stream_name;
};

void RunHostTask(void* arg) {
  std::unique_ptr<HostTask> task(static_cast<HostTask*>(arg));
  if (task->error->failed()) return;  // sticky: later launches are skipped, as on the sim device
  try {
    task->fn();
  } catch (const std::exception& e) {
    task->error->set(Status::Internal("stream '" + task->stream_name +
                                      "': launched function threw: " + e.what()));
  } catch (...) {
    task->error->set(
        Status::Internal("stream '" + task->stream_name + "': launched function threw"));
  }
}

class CudaDevice;

class CudaStream final : public Stream {
 public:
  CudaStream(CudaDevice* device, int ordinal, std::string name, cudaStream_t stream,
             std::shared_ptr<ErrorSlot> error)
      : device_(device), ordinal_(ordinal), name_(std::move(name)), stream_(stream),
        error_(std::move(error)) {}
  ~CudaStream() override;

  const std::string& name() const override { return name_; }

  void launch(std::function<void()> fn) override {
    cudaSetDevice(ordinal_);
    auto task = std::make_unique<HostTask>(HostTask{std::move(fn), error_, name_});
    cudaError_t err = cudaLaunchHostFunc(stream_, &RunHostTask, task.get());
    if (err == cudaSuccess) {
      task.release();  // owned by RunHostTask now
    } else {
      error_->set(CudaStatus(err, "stream '" + name_ + "': cudaLaunchHostFunc"));
    }
  }
  void record(Event& event) override {
    cudaSetDevice(ordinal_);
    error_->set(CudaStatus(cudaEventRecord(AsCuda(event).handle(), stream_),
                           "stream '" + name_ + "': cudaEventRecord"));
  }
  void wait(Event& event) override {
    cudaSetDevice(ordinal_);
    error_->set(CudaStatus(cudaStreamWaitEvent(stream_, AsCuda(event).handle(), 0),
                           "stream '" + name_ + "': cudaStreamWaitEvent"));
  }
  Status synchronize() override {
    cudaSetDevice(ordinal_);
    error_->set(CudaStatus(cudaStreamSynchronize(stream_),
                           "stream '" + name_ + "': cudaStreamSynchronize"));
    return error_->get();
  }

  CudaDevice* device() const { return device_; }
  cudaStream_t handle() const { return stream_; }
  ErrorSlot& error() { return *error_; }

 private:
  CudaDevice* const device_;
  const int ordinal_;
  const std::string name_;
  const cudaStream_t stream_;
  std::shared_ptr<ErrorSlot> error_;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(int ordinal, uint64_t capacity_bytes) : ordinal_(ordinal) {
    arena_.capacity = capacity_bytes;
  }

  ~CudaDevice() override {
    {
      std::lock_guard<std::mutex> lock(streams_mu_);
      STRATA_CHECK(streams_.empty()) << streams_.size() << " stream(s) of " << name()
                                     << " outlive it; destroy streams before their device";
    }
    cudaSetDevice(ordinal_);
    for (const auto& [ptr, block] : live_) cudaFree(block.base);
  }

  std::string name() const override { return "cuda:" + std::to_string(ordinal_); }

  Result<void*> alloc(size_t bytes) override {
    if (bytes == 0) {
      return Status::InvalidArgument(name() + ": alloc of 0 bytes; a device buffer needs a size");
    }
    const uint64_t rounded =
        bytes > UINT64_MAX - (kDeviceAlignment - 1) ? UINT64_MAX : RoundUp(bytes);
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (!arena_.fits(rounded)) {
      return Status::ResourceExhausted(
          name() + ": cannot allocate " + FormatBytes(bytes) + " (" + std::to_string(bytes) +
          " bytes): " + arena_.in_use() +
          " budget; raise --gpu-mem, or lower what must be resident at once (smaller "
          "--micro-batch or page size)");
    }
    cudaSetDevice(ordinal_);
    void* base = nullptr;
    cudaError_t err = cudaMalloc(&base, rounded);
    void* aligned = base;
    if (err == cudaSuccess && reinterpret_cast<uintptr_t>(base) % kDeviceAlignment != 0) {
      cudaFree(base);
      err = cudaMalloc(&base, rounded + kDeviceAlignment);
      aligned = reinterpret_cast<void*>(RoundUp(reinterpret_cast<uintptr_t>(base)));
    }
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the (non-sticky) allocation error
      return CudaStatus(err, name() + ": cudaMalloc of " + FormatBytes(rounded) + " with " +
                                 FormatBytes(arena_.current) +
                                 " of the budget in use; the GPU has less free memory than "
                                 "--gpu-mem (other processes?); lower --gpu-mem");
    }
    live_.emplace(reinterpret_cast<uintptr_t>(aligned), Block{base, rounded, bytes});
    arena_.on_alloc(rounded);
    return aligned;
  }

  void free(void* ptr) override {
    if (ptr == nullptr) return;
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
    STRATA_CHECK(it != live_.end()) << name() << ": free of " << ptr
                                    << ", which is not a live allocation (double free or a "
                                       "pointer from elsewhere)";
    cudaSetDevice(ordinal_);
    cudaFree(it->second.base);  // fails only on a dead context, which synchronize reports
    arena_.on_free(it->second.rounded_bytes);
    live_.erase(it);
  }

  DeviceStats stats() const override {
    DeviceStats s;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      arena_.fill(s);
    }
    copies_.fill(s);
    return s;
  }

  bool is_device_memory(const void* ptr, size_t bytes) const override {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = live_.upper_bound(p);
    if (it == live_.begin()) return false;
    --it;
    const uint64_t offset = p - it->first;
    return offset < it->second.requested_bytes && bytes <= it->second.requested_bytes - offset;
  }

  std::unique_ptr<Stream> create_stream(const std::string& stream_name) override {
    cudaSetDevice(ordinal_);
    cudaStream_t stream = nullptr;
    Status status = CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                               name() + ": cudaStreamCreate '" + stream_name + "'");
    // The interface has no error path here: running out of streams is not something a user
    // can cause with flags, so it is an invariant.
    STRATA_CHECK(status.ok()) << status.to_string();
    auto error = std::make_shared<ErrorSlot>();
    {
      std::lock_guard<std::mutex> lock(streams_mu_);
      streams_.push_back(error);
    }
    return std::make_unique<CudaStream>(this, ordinal_, stream_name, stream, std::move(error));
  }

  std::unique_ptr<Event> create_event() override {
    cudaSetDevice(ordinal_);
    cudaEvent_t event = nullptr;
    Status status = CudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                               name() + ": cudaEventCreate");
    STRATA_CHECK(status.ok()) << status.to_string();
    return std::make_unique<CudaEvent>(ordinal_, event);
  }

  Status copy_async(void* dst, const void* src, size_t bytes, CopyKind kind,
                    Stream& stream) override {
    auto* cuda_stream = dynamic_cast<CudaStream*>(&stream);
    if (cuda_stream == nullptr || cuda_stream->device() != this) {
      return Status::InvalidArgument(name() + ": copy_async on stream '" + stream.name() +
                                     "', which belongs to another device");
    }
    if (bytes == 0) return Status::Ok();
    const bool dst_dev = kind != CopyKind::kDeviceToHost;
    const bool src_dev = kind != CopyKind::kHostToDevice;
    // With unified addressing host and device addresses are disjoint, so "host" means "not in
    // a live allocation of this device".
    if (dst == nullptr || src == nullptr ||
        is_device_memory(dst, dst_dev ? bytes : 1) != dst_dev ||
        is_device_memory(src, src_dev ? bytes : 1) != src_dev) {
      return Status::InvalidArgument(name() + ": copy of " + std::to_string(bytes) +
                                     " bytes: a pointer is null or on the wrong side for the "
                                     "copy kind (device pointers must lie inside one alloc)");
    }
    const cudaMemcpyKind cuda_kind = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                                     : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                                       : cudaMemcpyDeviceToDevice;
    cudaSetDevice(ordinal_);
    Status status = CudaStatus(cudaMemcpyAsync(dst, src, bytes, cuda_kind, cuda_stream->handle()),
                               name() + ": cudaMemcpyAsync on stream '" + stream.name() + "'");
    if (!status.ok()) {
      cuda_stream->error().set(status);
      return status;
    }
    copies_.of(kind).fetch_add(bytes, std::memory_order_relaxed);
    return Status::Ok();
  }

  Status register_host(void* ptr, size_t bytes) override {
    cudaSetDevice(ordinal_);
    return CudaStatus(cudaHostRegister(ptr, bytes, cudaHostRegisterDefault),
                      name() + ": cudaHostRegister of " + FormatBytes(bytes) +
                          " (locked-memory limit? see ulimit -l)");
  }

  Status unregister_host(void* ptr) override {
    cudaSetDevice(ordinal_);
    return CudaStatus(cudaHostUnregister(ptr), name() + ": cudaHostUnregister");
  }

  Status synchronize() override {
    cudaSetDevice(ordinal_);
    Status first = CudaStatus(cudaDeviceSynchronize(), name() + ": cudaDeviceSynchronize");
    std::vector<std::shared_ptr<ErrorSlot>> streams;
    {
      std::lock_guard<std::mutex> lock(streams_mu_);
      streams = streams_;
    }
    for (auto& slot : streams) {
      Status status = slot->get();
      if (first.ok() && !status.ok()) first = status;
    }
    return first;
  }

  // All nullptr for now (CudaKernelTable below): CreateDevice refuses an incomplete table.
  const KernelTable& kernels() const override { return CudaKernelTable(); }

  void release_stream(const ErrorSlot* slot) {
    std::lock_guard<std::mutex> lock(streams_mu_);
    auto it = std::find_if(streams_.begin(), streams_.end(),
                           [&](const auto& s) { return s.get() == slot; });
    STRATA_CHECK(it != streams_.end()) << name() << ": release of an unknown stream";
    streams_.erase(it);
  }

 private:
  struct Block {
    void* base;                // what cudaMalloc returned (before alignment)
    uint64_t rounded_bytes;    // charged to the budget
    uint64_t requested_bytes;  // what the caller asked for
  };

  const int ordinal_;

  mutable std::shared_mutex mu_;
  std::map<uintptr_t, Block> live_;  // aligned address -> block
  ArenaCounters arena_;  // guarded by mu_
  CopyCounters copies_;

  std::mutex streams_mu_;
  std::vector<std::shared_ptr<ErrorSlot>> streams_;
};

CudaStream::~CudaStream() {
  cudaSetDevice(ordinal_);
  // Like the sim backend, destroying a stream lets its queued work finish first.
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
  device_->release_stream(error_.get());
}

}  // namespace

// Every entry nullptr: the CUDA kernels are the CUDA backend work still to come, which fills
// this table in. Until then a CUDA device cannot train (KernelTable::complete() is false).
const KernelTable& CudaKernelTable() {
  static const KernelTable table{};
  return table;
}

int CudaDeviceCount() {
  // With no GPU, cudaGetDeviceCount returns cudaErrorInsufficientDriver and leaves count unset.
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // do not leave the error for the next CUDA call to report
    return 0;
  }
  return count;
}

Result<std::unique_ptr<Device>> CreateCudaDevice(int ordinal, uint64_t capacity_bytes) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return Status::NotSupported(
        "cuda:" + std::to_string(ordinal) + ": no CUDA GPU is usable (cudaGetDeviceCount: " +
        (err == cudaSuccess ? std::string("0 devices") : std::string(cudaGetErrorName(err))) +
        "); check the NVIDIA driver with nvidia-smi, or use the sim device");
  }
  if (ordinal < 0 || ordinal >= count) {
    return Status::InvalidArgument("cuda:" + std::to_string(ordinal) + ": no such device; " +
                                   std::to_string(count) + " CUDA device(s) present (0.." +
                                   std::to_string(count - 1) + ")");
  }
  if (capacity_bytes == 0) {
    return Status::InvalidArgument("cuda:" + std::to_string(ordinal) +
                                   ": capacity is 0 bytes; give the budget with --gpu-mem");
  }
  STRATA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal), "cudaSetDevice"));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  STRATA_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes),
                                    "cuda:" + std::to_string(ordinal) + ": cudaMemGetInfo"));
  if (capacity_bytes > total_bytes) {
    return Status::InvalidArgument("cuda:" + std::to_string(ordinal) + ": --gpu-mem " +
                                   FormatBytes(capacity_bytes) + " exceeds the GPU's " +
                                   FormatBytes(total_bytes) + "; lower --gpu-mem");
  }
  return std::unique_ptr<Device>(std::make_unique<CudaDevice>(ordinal, capacity_bytes));
}

}  // namespace strata
