// The sim device (sim_device.h): its arena (Note [Sim arena]), its copies and its list of
// streams. The streams, events and link clocks themselves are in sim_stream.cc.
#include "core/device/sim_device.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <thread>
#include <utility>

#include "core/device/sim_stream.h"
#include "core/util/option.h"
#include "core/util/sizes.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define STRATA_SIM_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define STRATA_SIM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define STRATA_SIM_POISON(p, n) ((void)(p), (void)(n))
#define STRATA_SIM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace strata {

using sim_internal::Clock;
using sim_internal::Op;
using sim_internal::StreamCore;

namespace {

uint64_t RoundUp(uint64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

const char* CopyKindName(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return "host->device";
    case CopyKind::kDeviceToHost: return "device->host";
    case CopyKind::kDeviceToDevice: return "device->device";
  }
  return "?";
}

}  // namespace

Result<std::unique_ptr<SimDevice>> SimDevice::Create(const SimDeviceOptions& options) {
  if (options.capacity_bytes == 0) {
    return AtFault(
        Option::kGpuMem,
        Status::InvalidArgument("sim device: capacity is 0 bytes; give the device budget with " +
                                Mention(Option::kGpuMem) + " (e.g. 2G)"),
        {{"got", 0}});
  }
  if (!std::isfinite(options.link_gbps) || options.link_gbps < 0) {
    // Not a number to state: NaN and infinity have no int64_t.
    return AtFault(Option::kSimLinkGbps,
                   Status::InvalidArgument("sim device: " + Mention(Option::kSimLinkGbps) + " " +
                                           std::to_string(options.link_gbps) +
                                           " is not a rate; use a positive number of GB/s, or 0 "
                                           "for unthrottled copies"));
  }
  if (options.capacity_bytes > UINT64_MAX - kDeviceAlignment) {
    return AtFault(
        Option::kGpuMem,
        Status::InvalidArgument("sim device: " + Mention(Option::kGpuMem) + " " +
                                std::to_string(options.capacity_bytes) + " bytes is too large"),
        {{"got", FaultNumber(options.capacity_bytes)},
         {"max", FaultNumber(UINT64_MAX - kDeviceAlignment)}});
  }
  const uint64_t arena_bytes = RoundUp(options.capacity_bytes);
  void* base = mmap(nullptr, arena_bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    return ShortOfBytes(
        Option::kGpuMem,
        Status::FromErrno(errno, "sim device: mmap of a " + FormatBytes(arena_bytes) +
                                     " arena for " + Mention(Option::kGpuMem))
            .with_context("lower " + Mention(Option::kGpuMem) +
                          " or raise the process's address-space limit (ulimit -v)"),
        options.capacity_bytes, arena_bytes);
  }
  return std::unique_ptr<SimDevice>(new SimDevice(static_cast<char*>(base), arena_bytes, options));
}

SimDevice::SimDevice(char* base, uint64_t arena_bytes, const SimDeviceOptions& options)
    : base_(base),
      arena_bytes_(arena_bytes),
      options_(options),
      touched_end_(reinterpret_cast<uintptr_t>(base)) {
  arena_.capacity = options_.capacity_bytes;
  free_blocks_.emplace(reinterpret_cast<uintptr_t>(base_), arena_bytes_);
  if (options_.link_gbps > 0) {
    h2d_link_ = std::make_unique<sim_internal::Link>(options_.link_gbps);
    d2h_link_ = std::make_unique<sim_internal::Link>(options_.link_gbps);
  }
}

SimDevice::~SimDevice() {
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    STRATA_CHECK(streams_.empty()) << streams_.size() << " stream(s) of the sim device (first '"
                                   << streams_.front()->name()
                                   << "') outlive it; destroy streams before their device";
  }
  // Blocks were poisoned one by one, only ever below touched_end_; unpoison that much before
  // handing the range back (not the whole arena: ASan writes shadow for every byte named, which
  // for a 1 TiB --gpu-mem would be 128 GiB).
  STRATA_SIM_UNPOISON(base_, touched_end_ - reinterpret_cast<uintptr_t>(base_));
  munmap(base_, arena_bytes_);
}

Status SimDevice::exhausted_locked(size_t requested, uint64_t rounded, bool fragmented) const {
  std::string msg = "sim device: cannot allocate " + FormatBytes(requested) + " (" +
                    std::to_string(requested) + " bytes, " + std::to_string(rounded) +
                    " after 4 KiB alignment): " + arena_.in_use() + " capacity";
  if (fragmented) {
    uint64_t largest = 0;
    for (const auto& [start, bytes] : free_blocks_) largest = std::max(largest, bytes);
    msg += ", and the arena is fragmented (largest free block " + FormatBytes(largest) + ")";
  }
  msg += "; raise " + Mention(Option::kGpuMem) +
         ", or lower what must be resident at once (smaller " + Mention(Option::kMicroBatch) +
         " or "
         "page size)";
  return AtFault(Option::kGpuMem, Status::ResourceExhausted(std::move(msg)),
                 {{"need_bytes", FaultNumber(rounded)},
                  {"in_use_bytes", FaultNumber(arena_.current)},
                  {"capacity_bytes", FaultNumber(arena_.capacity)}});
}

Result<void*> SimDevice::alloc(size_t bytes) {
  if (bytes == 0) {
    return Status::InvalidArgument("sim device: alloc of 0 bytes; a device buffer needs a size");
  }
  const uint64_t rounded =
      bytes > UINT64_MAX - (kDeviceAlignment - 1) ? UINT64_MAX : RoundUp(bytes);
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (!arena_.fits(rounded)) {
    return exhausted_locked(bytes, rounded, /*fragmented=*/false);
  }
  auto it = std::find_if(free_blocks_.begin(), free_blocks_.end(),
                         [&](const auto& block) { return block.second >= rounded; });
  if (it == free_blocks_.end()) return exhausted_locked(bytes, rounded, /*fragmented=*/true);

  const uintptr_t start = it->first;
  const uint64_t left = it->second - rounded;
  free_blocks_.erase(it);
  if (left > 0) free_blocks_.emplace(start + rounded, left);
  live_.emplace(start, Block{rounded, bytes});
  arena_.on_alloc(rounded);
  touched_end_ = std::max(touched_end_, start + rounded);

  char* p = reinterpret_cast<char*>(start);
  STRATA_SIM_UNPOISON(p, bytes);
  STRATA_SIM_POISON(p + bytes, rounded - bytes);
  return static_cast<void*>(p);
}

void SimDevice::free(void* ptr) {
  if (ptr == nullptr) return;
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
  STRATA_CHECK(it != live_.end()) << "sim device: free of " << ptr
                                  << ", which is not a live allocation (double free or a "
                                     "pointer from elsewhere)";
  uintptr_t start = it->first;
  uint64_t bytes = it->second.rounded_bytes;
  live_.erase(it);
  arena_.on_free(bytes);
  STRATA_SIM_POISON(reinterpret_cast<char*>(start), bytes);

  // Coalesce with the following and the preceding free block.
  auto next = free_blocks_.lower_bound(start);
  if (next != free_blocks_.end() && start + bytes == next->first) {
    bytes += next->second;
    next = free_blocks_.erase(next);
  }
  if (next != free_blocks_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += bytes;
      return;
    }
  }
  free_blocks_.emplace_hint(next, start, bytes);
}

DeviceStats SimDevice::stats() const {
  DeviceStats s;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    arena_.fill(s);
  }
  copies_.fill(s);
  return s;
}

bool SimDevice::is_device_memory(const void* ptr, size_t bytes) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  if (p < reinterpret_cast<uintptr_t>(base_) || bytes > arena_bytes_) return false;
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = live_.upper_bound(p);  // first block starting after p
  if (it == live_.begin()) return false;
  --it;
  const uint64_t offset = p - it->first;
  return offset < it->second.requested_bytes && bytes <= it->second.requested_bytes - offset;
}

bool SimDevice::overlaps_arena(const void* ptr, size_t bytes) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  const auto lo = reinterpret_cast<uintptr_t>(base_);
  const uint64_t hi = lo + arena_bytes_;
  return p < hi && (p >= lo || lo - p < bytes);
}

std::size_t SimDevice::free_block_count() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return free_blocks_.size();
}

uint64_t SimDevice::largest_free_block_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  uint64_t largest = 0;
  for (const auto& [start, bytes] : free_blocks_) largest = std::max(largest, bytes);
  return largest;
}

std::unique_ptr<Stream> SimDevice::create_stream(const std::string& name) {
  auto core = std::make_shared<StreamCore>(name);
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams_.push_back(core);
  }
  return std::make_unique<SimStream>(this, std::move(core));
}

void SimDevice::release_stream(const StreamCore* core) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = std::find_if(streams_.begin(), streams_.end(),
                         [&](const auto& s) { return s.get() == core; });
  STRATA_CHECK(it != streams_.end()) << "sim device: release of an unknown stream";
  streams_.erase(it);
}

std::unique_ptr<Event> SimDevice::create_event() { return std::make_unique<SimEvent>(); }

Status SimDevice::copy_async(void* dst, const void* src, size_t bytes, CopyKind kind,
                             Stream& stream) {
  auto* sim_stream = dynamic_cast<SimStream*>(&stream);
  if (sim_stream == nullptr || sim_stream->device() != this) {
    return Status::InvalidArgument("sim device: copy_async on stream '" + stream.name() +
                                   "', which belongs to another device");
  }
  if (bytes == 0) return Status::Ok();
  if (dst == nullptr || src == nullptr) {
    return Status::InvalidArgument(std::string("sim device: ") + CopyKindName(kind) +
                                   " copy with a null pointer");
  }
  const bool dst_on_device = kind != CopyKind::kDeviceToHost;
  const bool src_on_device = kind != CopyKind::kHostToDevice;
  auto check = [&](const void* p, bool on_device, const char* role) -> Status {
    const bool ok = on_device ? is_device_memory(p, bytes) : !overlaps_arena(p, bytes);
    if (ok) return Status::Ok();
    std::string where = on_device ? " is not inside one live device allocation"
                                  : " overlaps device memory";
    return Status::InvalidArgument(
        std::string("sim device: ") + CopyKindName(kind) + " copy of " + std::to_string(bytes) +
        " bytes: " + role + " " + std::to_string(reinterpret_cast<uintptr_t>(p)) + where);
  };
  STRATA_RETURN_IF_ERROR(check(dst, dst_on_device, "dst"));
  STRATA_RETURN_IF_ERROR(check(src, src_on_device, "src"));

  sim_internal::Link* link = kind == CopyKind::kHostToDevice   ? h2d_link_.get()
                             : kind == CopyKind::kDeviceToHost ? d2h_link_.get()
                                                               : nullptr;
  std::atomic<uint64_t>* counter = &copies_.of(kind);
  Op op;
  op.run = [dst, src, bytes, link, counter](Clock::time_point ready, Clock::time_point& done) {
    std::memmove(dst, src, bytes);  // D2D within the arena may overlap
    if (link != nullptr) {
      // The copy is not complete (for synchronize, events, later ops) before its modelled end.
      done = link->reserve(bytes, ready);
      std::this_thread::sleep_until(done);
    }
    counter->fetch_add(bytes, std::memory_order_relaxed);
    return Status::Ok();
  };
  sim_stream->core().enqueue(std::move(op));
  return Status::Ok();
}

Status SimDevice::register_host(void* /*ptr*/, size_t /*bytes*/) { return Status::Ok(); }
Status SimDevice::unregister_host(void* /*ptr*/) { return Status::Ok(); }

Status SimDevice::synchronize() {
  std::vector<std::shared_ptr<StreamCore>> streams;
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams = streams_;
  }
  Status first;
  for (auto& core : streams) {
    Status status = core->synchronize();
    if (first.ok() && !status.ok()) first = status;
  }
  return first;
}

Result<std::unique_ptr<Device>> CreateSimDevice(const SimDeviceOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SimDevice> device, SimDevice::Create(options));
  return std::unique_ptr<Device>(std::move(device));
}

}  // namespace strata
