// The `cuda` backend of Device (device.h). Compiled by nvcc as C++17 (CMake 3.25 has no CUDA20
// dialect), so it includes only C++17-clean headers.
//
// Kernels: kernels() returns CudaKernelTable() (cuda_kernel_table.cu); its entries enqueue on
// the stream whose launch() calls them (Note [CUDA kernels on the stream's thread]).
//
// Memory: each alloc is one cudaMalloc, accounted against the --gpu-mem budget before CUDA is
// asked (the budget is hard even when the GPU has more). cudaMalloc guarantees only 256-byte
// alignment; a block that is not kDeviceAlignment-aligned is re-requested with one alignment
// unit of slack and the returned pointer is aligned up (the slack is not charged to the budget).
// Streams (cuda_stream.h, Note [CUDA streams with a host thread]) are non-blocking cudaStreams
// with a host worker each, events cudaEvents without timing. Copy byte counters count copies
// when they are enqueued.
//
// Threads: CUDA's current device is per host thread, so every method that calls CUDA first
// makes this device current. The live-allocation map and memory stats are guarded by mu_
// (alloc/free exclusive, is_device_memory/stats shared); the stream list by streams_mu_; each
// stream's sticky error by its ErrorSlot's mutex.
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

#include "core/device/cuda_blas.h"
#include "core/device/cuda_status.h"
#include "core/device/cuda_stream.h"
#include "core/device/device.h"
#include "core/device/device_accounting.h"
#include "core/util/option.h"
#include "core/util/sizes.h"

namespace strata {
namespace {

using cuda::CudaStatus;
using cuda::CudaStream;
using cuda::ErrorSlot;

uint64_t RoundUp(uint64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

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
      return AtFault(
          Option::kGpuMem,
          Status::ResourceExhausted(name() + ": cannot allocate " + FormatBytes(bytes) + " (" +
                                    std::to_string(bytes) + " bytes): " + arena_.in_use() +
                                    " budget; raise " + Mention(Option::kGpuMem) +
                                    ", or lower what must be resident at once (smaller " +
                                    Mention(Option::kMicroBatch) + " or page size)"),
          {{"need_bytes", FaultNumber(rounded)},
           {"in_use_bytes", FaultNumber(arena_.current)},
           {"capacity_bytes", FaultNumber(arena_.capacity)}});
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
      return AtFault(Option::kGpuMem,
                     CudaStatus(err, name() + ": cudaMalloc of " + FormatBytes(rounded) + " with " +
                                         FormatBytes(arena_.current) +
                                         " of the budget in use; the GPU has less free memory "
                                         "than " +
                                         Mention(Option::kGpuMem) + " (other processes?); lower " +
                                         Mention(Option::kGpuMem)),
                     {{"need_bytes", FaultNumber(rounded)},
                      {"in_use_bytes", FaultNumber(arena_.current)},
                      {"capacity_bytes", FaultNumber(arena_.capacity)}});
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
    auto stream = std::make_unique<CudaStream>(
        this, ordinal_, stream_name, std::make_shared<ErrorSlot>(),
        [this](CudaStream* gone) { release_stream(gone); });
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams_.push_back(stream.get());
    return stream;
  }

  std::unique_ptr<Event> create_event() override {
    cudaSetDevice(ordinal_);
    cudaEvent_t event = nullptr;
    Status status = CudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                               name() + ": cudaEventCreate");
    STRATA_CHECK(status.ok()) << status.to_string();
    return std::make_unique<cuda::CudaEvent>(std::make_shared<cuda::EventState>(ordinal_, event));
  }

  Status copy_async(void* dst, const void* src, size_t bytes, CopyKind kind,
                    Stream& stream) override {
    auto* cuda_stream = dynamic_cast<CudaStream*>(&stream);
    if (cuda_stream == nullptr || cuda_stream->owner() != this) {
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
    cuda_stream->copy(dst, src, bytes, cuda_kind);
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

  // Each stream drains its worker and then its cudaStream. streams_mu_ is held throughout, so
  // a stream being destroyed (which unregisters first) stays alive until this is done. So a
  // function given to launch() must not create or destroy a stream, nor synchronize the device.
  Status synchronize() override {
    std::lock_guard<std::mutex> lock(streams_mu_);
    Status first;
    for (CudaStream* stream : streams_) {
      Status status = stream->synchronize();
      if (first.ok() && !status.ok()) first = status;
    }
    cudaSetDevice(ordinal_);
    Status device = CudaStatus(cudaDeviceSynchronize(), name() + ": cudaDeviceSynchronize");
    return first.ok() ? device : first;
  }

  // The CUDA kernels (cuda_kernel_table.cu), called from this device's streams' launches.
  using Device::kernels;
  const KernelTable& kernels(kernels::Dtype dtype) const override {
    return dtype == kernels::Dtype::kBf16 ? CudaBf16KernelTable() : CudaKernelTable();
  }

  void release_stream(const CudaStream* gone) {
    std::lock_guard<std::mutex> lock(streams_mu_);
    auto it = std::find(streams_.begin(), streams_.end(), gone);
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
  std::vector<CudaStream*> streams_;  // live streams; each unregisters in its destructor
};

}  // namespace

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
    return AtFault(Option::kGpuMem,
                   Status::InvalidArgument("cuda:" + std::to_string(ordinal) +
                                           ": capacity is 0 bytes; give the budget with " +
                                           Mention(Option::kGpuMem)),
                   {{"got", 0}});
  }
  STRATA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal), "cudaSetDevice"));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  STRATA_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes),
                                    "cuda:" + std::to_string(ordinal) + ": cudaMemGetInfo"));
  if (capacity_bytes > total_bytes) {
    return AtFault(Option::kGpuMem,
                   Status::InvalidArgument(
                       "cuda:" + std::to_string(ordinal) + ": " + Mention(Option::kGpuMem) + " " +
                       FormatBytes(capacity_bytes) + " exceeds the GPU's " +
                       FormatBytes(total_bytes) + "; lower " + Mention(Option::kGpuMem)),
                   {{"got", FaultNumber(capacity_bytes)}, {"max", FaultNumber(total_bytes)}});
  }
  // Loaded here, not linked: Note [cuBLAS loaded on first use] in cuda_blas.h.
  STRATA_RETURN_IF_ERROR(
      cuda::LoadCublas().status().with_context("cuda:" + std::to_string(ordinal)));
  // Note [Kernel scratch stays in the pool]
  // The kernels' stream scratch (StreamScratch: bf16 operand copies, sort buffers) comes from
  // cudaMallocAsync's default pool. With the pool's default release threshold (0) a synchronize
  // may hand its memory back to the driver, and Stream::launch synchronizes before each launch,
  // so a launch's first scratch could be mapped afresh each time. The pool keeps it instead: its
  // footprint is the largest scratch in use at once, as before, never counted against --gpu-mem
  // (nor was it). On the H200 the step times did not move (bench/results/gpu/2026-11-28-h200,
  // run 3 against run 1): the remapping was not a cost there, the threshold is kept so that it
  // cannot become one.
  cudaMemPool_t pool = nullptr;
  STRATA_RETURN_IF_ERROR(CudaStatus(cudaDeviceGetDefaultMemPool(&pool, ordinal),
                                    "cuda:" + std::to_string(ordinal) + ": default memory pool"));
  uint64_t keep = UINT64_MAX;
  STRATA_RETURN_IF_ERROR(
      CudaStatus(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
                 "cuda:" + std::to_string(ordinal) + ": memory pool release threshold"));
  return std::unique_ptr<Device>(std::make_unique<CudaDevice>(ordinal, capacity_bytes));
}

}  // namespace strata
