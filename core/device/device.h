// Device: the one interface behind which both the simulated device and CUDA sit.
//
// Modelled on CUDA semantics so both backends fit:
// - alloc/free come from a device arena with a hard capacity (the --gpu-mem budget). An
//   allocation that does not fit returns ResourceExhausted with the numbers; it never blocks.
// - A Stream is an in-order queue. Work on one stream runs in submission order; work on two
//   streams is ordered only through Events.
// - An Event is recorded on a stream (it completes when everything enqueued before it on that
//   stream has run) and can be waited on from another stream or from the host.
// - copy_async moves bytes host<->device or device<->device in stream order. Host memory given
//   to copies should be pinned (register_host) on CUDA; the sim backend does not care.
// - Kernels are enqueued with Stream::launch: the callable runs on the stream's own host thread
//   once the stream's earlier work has completed (both backends). The compute itself goes
//   through the device's KernelTable (kernels(), kernel_table.h) called from there: the sim
//   device's is the CPU kernels, which compute on the spot; the CUDA device's enqueue CUDA
//   kernels on that stream (Note [CUDA streams with a host thread] in cuda_stream.h).
//
// Threads: every method of Device, Stream and Event may be called from any thread. Errors
// raised inside a stream (a failed copy) are sticky: Stream::synchronize returns the first.
// Ownership: factories return unique_ptrs; a Stream or Event must not outlive its Device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/device/kernel_table.h"
#include "core/util/status.h"

namespace strata {

// Every device allocation is aligned to this (page buffers are 4 KiB aligned for O_DIRECT).
inline constexpr size_t kDeviceAlignment = 4096;

struct DeviceStats {
  uint64_t capacity_bytes = 0;  // the hard budget of the arena
  uint64_t current_bytes = 0;   // bytes allocated now (rounded to kDeviceAlignment)
  uint64_t peak_bytes = 0;      // high-water mark of current_bytes
  uint64_t alloc_count = 0;
  uint64_t free_count = 0;
  uint64_t h2d_bytes = 0;       // bytes copied host->device so far
  uint64_t d2h_bytes = 0;       // bytes copied device->host so far
  uint64_t d2d_bytes = 0;
};

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

class Stream;

class Event {
 public:
  virtual ~Event() = default;
  // Blocks the calling host thread until the event has completed. An event that was never
  // recorded is complete.
  virtual void synchronize() = 0;
  // True when the event has completed (non-blocking).
  virtual bool query() = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  virtual const std::string& name() const = 0;
  // Enqueues `fn` in stream order: it runs on this stream's worker thread after everything
  // enqueued before it has completed. It may call the device's kernel-table entries (on CUDA
  // they enqueue on this stream), but must not submit work to this same stream (copy_async,
  // record, wait, launch, synchronize on it): the CUDA backend checks that.
  virtual void launch(std::function<void()> fn) = 0;
  // The event completes when all work enqueued on this stream before this call has run.
  virtual void record(Event& event) = 0;
  // Work enqueued on this stream after this call waits until `event` completes.
  virtual void wait(Event& event) = 0;
  // Blocks the host until all work enqueued so far has run; returns the stream's first error.
  virtual Status synchronize() = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  // "sim" or "cuda:0".
  virtual std::string name() const = 0;

  // Allocates `bytes` (rounded up to kDeviceAlignment) from the arena. ResourceExhausted when
  // the arena's capacity would be exceeded; the message gives requested, in use and capacity.
  virtual Result<void*> alloc(size_t bytes) = 0;
  // Returns memory from alloc. nullptr is ignored. The caller guarantees no queued work uses it.
  virtual void free(void* ptr) = 0;
  virtual DeviceStats stats() const = 0;

  // True when [ptr, ptr+bytes) lies inside one live allocation of this device. The sim backend
  // uses it to check that kernels only touch device-resident memory.
  virtual bool is_device_memory(const void* ptr, size_t bytes) const = 0;

  virtual std::unique_ptr<Stream> create_stream(const std::string& name) = 0;
  virtual std::unique_ptr<Event> create_event() = 0;

  // Copies in stream order. Device pointers must come from alloc(). Returns InvalidArgument at
  // once for a bad pointer/kind combination; errors during the copy surface on synchronize.
  virtual Status copy_async(void* dst, const void* src, size_t bytes, CopyKind kind,
                            Stream& stream) = 0;

  // Pins host memory for fast async copies (cudaHostRegister). Sim: no-op.
  virtual Status register_host(void* ptr, size_t bytes) = 0;
  virtual Status unregister_host(void* ptr) = 0;

  // Blocks until every stream of this device is idle; returns the first error of any stream.
  virtual Status synchronize() = 0;

  // The kernels that compute on this device's memory at a compute dtype (kernel_table.h; Note
  // [bf16 compute] in core/kernels/dtype.h). Lives as long as the program; a nullptr entry is an
  // op this backend lacks.
  virtual const KernelTable& kernels(kernels::Dtype dtype) const = 0;
  // The fp32 kernels.
  const KernelTable& kernels() const { return kernels(kernels::Dtype::kFp32); }
};

struct SimDeviceOptions {
  uint64_t capacity_bytes = 0;  // --gpu-mem; 0 is refused
  double link_gbps = 0.0;       // --sim-link-gbps: host<->device copy rate in GB/s (1e9 B/s); 0 = memcpy speed
};

// The simulated device: the arena is host memory capped at capacity_bytes, each stream a
// worker thread, copies real memcpy (throttled to link_gbps when set), kernels CPU code.
Result<std::unique_ptr<Device>> CreateSimDevice(const SimDeviceOptions& options);

// Number of CUDA devices usable now (0 when Strata was built without CUDA or no GPU/driver).
int CudaDeviceCount();
// The CUDA backend; NotSupported when built without CUDA or when no GPU is present.
Result<std::unique_ptr<Device>> CreateCudaDevice(int ordinal, uint64_t capacity_bytes);

}  // namespace strata
