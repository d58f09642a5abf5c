// SimDevice: the `sim` backend of Device (device.h). Every test runs on it, so it is built to be
// honest rather than fast: device memory is a separate arena with a hard cap, streams really run
// concurrently, copies really move bytes and take the time a PCIe link would.
//
// Note [Sim arena]
// The arena is one mmap'd region of round_up(capacity_bytes, 4 KiB) bytes (MAP_NORESERVE, so a
// large --gpu-mem commits RAM only as it is touched). Blocks are carved first-fit from a free
// list ordered by address and coalesced with both neighbours on free, so fragmentation behaves
// like a real arena: an allocation can fail with bytes free but no single block large enough,
// and the ResourceExhausted message says so. Every block is a multiple of kDeviceAlignment and
// starts on it. Under AddressSanitizer freed blocks and the padding after each allocation are
// poisoned, so a kernel or copy touching freed "device" memory is reported.
//
// Note [Sim link throttle]
// With link_gbps > 0, host->device and device->host copies each go through their own link
// (PCIe is full duplex) shared by all streams of the device. A link keeps a modelled clock: a
// copy of n bytes occupies it for n / (link_gbps * 1e9) seconds, starting at the later of
// (a) the end of the link's previous transfer and (b) the copy's ready time: when it was
// enqueued, or when its stream predecessor ended (in modelled time, if that was a copy). The
// worker memcpys at once, then sleeps until the modelled end, so a copy is never observed
// complete (synchronize, events, later ops) before the link could have delivered it. Because
// starts come from modelled times rather than from when the worker woke up, late wake-ups and
// scheduling delays do not accumulate: many small copies achieve the asked rate as closely as
// one large copy. Device->device copies are not throttled (on-device bandwidth is far above the
// link's).
//
// Threads: as in device.h, every method may be called from any thread. The arena (free list,
// live-allocation map, memory stats) is guarded by one shared_mutex: alloc/free take it
// exclusively, is_device_memory/stats take it shared. Copy byte counters are relaxed atomics.
// Each Stream owns one worker thread that runs its queue in order; destroying a Stream runs
// what is still queued, then joins the worker. A launched function runs on that worker, so it
// must not synchronize (or destroy) its own stream, nor call Device::synchronize.
// Sticky errors: a launched function that throws fails its stream with Internal; later launches
// and copies on that stream are skipped (event records and waits still run, so nothing that
// waits on the stream hangs) and every synchronize returns that first error.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/device/device_accounting.h"

namespace strata {

namespace sim_internal {
class Link;
class StreamCore;
}  // namespace sim_internal

class SimDevice final : public Device {
 public:
  // Validates `options` (capacity_bytes 0 or a negative/non-finite link_gbps is
  // InvalidArgument) and maps the arena (ResourceExhausted when the address space is refused).
  // CreateSimDevice (device.h) returns the same object behind the Device interface.
  static Result<std::unique_ptr<SimDevice>> Create(const SimDeviceOptions& options);

  // All Streams must have been destroyed first (checked). Live allocations are released with
  // the arena.
  ~SimDevice() override;

  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  std::string name() const override { return "sim"; }
  // bytes == 0 is InvalidArgument (a zero-size device buffer is a caller bug here).
  Result<void*> alloc(size_t bytes) override;
  // STRATA_CHECK-fails on a pointer that is not a live allocation (double free, foreign pointer).
  void free(void* ptr) override;
  DeviceStats stats() const override;
  // [ptr, ptr + bytes) must lie inside the *requested* bytes of one live allocation (the
  // alignment padding after it does not count). bytes == 0 asks whether ptr points into one.
  bool is_device_memory(const void* ptr, size_t bytes) const override;

  std::unique_ptr<Stream> create_stream(const std::string& name) override;
  std::unique_ptr<Event> create_event() override;

  // H2D: dst inside one allocation, src entirely outside the arena; D2H the reverse; D2D both
  // inside allocations. The stream must belong to this device. bytes == 0 is a no-op. Bytes are
  // counted in stats() when the copy has run.
  Status copy_async(void* dst, const void* src, size_t bytes, CopyKind kind,
                    Stream& stream) override;

  // No-ops: host memory needs no pinning on the sim device.
  Status register_host(void* ptr, size_t bytes) override;
  Status unregister_host(void* ptr) override;

  Status synchronize() override;

  // The CPU kernels (CpuKernelTable()): sim device memory is host-addressable.
  using Device::kernels;
  const KernelTable& kernels(kernels::Dtype dtype) const override {
    return dtype == kernels::Dtype::kBf16 ? CpuBf16KernelTable() : CpuKernelTable();
  }

  // Sim-only introspection (tests, diagnostics). Both take the arena lock shared.
  size_t free_block_count() const;
  uint64_t largest_free_block_bytes() const;

 private:
  struct Block {
    uint64_t rounded_bytes;    // bytes taken from the arena (multiple of kDeviceAlignment)
    uint64_t requested_bytes;  // bytes the caller asked for
  };

  SimDevice(char* base, uint64_t arena_bytes, const SimDeviceOptions& options);

  // True when [p, p + bytes) overlaps the arena at all (allocated or not).
  bool overlaps_arena(const void* p, size_t bytes) const;
  // Builds the ResourceExhausted status; expects mu_ held.
  Status exhausted_locked(size_t requested, uint64_t rounded, bool fragmented) const;
  void release_stream(const sim_internal::StreamCore* core);

  friend class SimStream;

  char* const base_;
  const uint64_t arena_bytes_;
  const SimDeviceOptions options_;

  mutable std::shared_mutex mu_;
  std::map<uintptr_t, uint64_t> free_blocks_;  // start address -> bytes, disjoint, coalesced
  std::map<uintptr_t, Block> live_;            // start address -> block
  ArenaCounters arena_;     // guarded by mu_
  uintptr_t touched_end_;  // end of the highest block ever allocated (ASan poisoning extent)
  CopyCounters copies_;

  // nullptr when link_gbps == 0 (copies run at memcpy speed).
  std::unique_ptr<sim_internal::Link> h2d_link_;
  std::unique_ptr<sim_internal::Link> d2h_link_;

  // Live streams, for Device::synchronize. Guarded by streams_mu_ (never held while waiting).
  std::mutex streams_mu_;
  std::vector<std::shared_ptr<sim_internal::StreamCore>> streams_;
};

}  // namespace strata
