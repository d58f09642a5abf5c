// FaultInjector: the seam through which tests (and `strata stress`) make the disk misbehave.
//
// An IoEngine built with IoEngineOptions::faults consults the injector once per request (one
// request = one attempt at one piece of a transfer after splitting at request_bytes; a requeued
// remainder is a new request):
//   - fail_nth_request(n, err): the n-th request from now (1-based) completes with `err`
//     (default EIO) without touching the disk;
//   - enospc_after_bytes(n): once n more bytes have been written, every further write request
//     completes with ENOSPC;
//   - eagain_next_requests(n): the next n requests fail with EAGAIN, a transient error the
//     engines retry (at most IoEngine::kMaxRetries times in a row per request);
//   - short_transfers(true): every request of 8 KiB or more moves only half of its bytes, as a
//     short read/write would, so the engines must requeue the rest;
//   - set_latency_ns(ns): every transfer piece completes no sooner than ns after it was issued;
//   - refuse_direct_io(true): opening a slot file with O_DIRECT fails with EINVAL, as on a
//     filesystem that does not support it;
//   - refuse_fallocate(true): creating or growing a slot file fails as if fallocate had met a
//     full disk (ENOSPC) after the free-space check passed (the disk filled in between);
//   - refuse_io_uring(true): IoEngine::Create cannot set up io_uring (EPERM, as under a seccomp
//     policy or io_uring_disabled=2), so kAuto falls back to the pread/pwrite pool.
// FlipByteOnDisk() changes one byte of a file behind Strata's back (bit rot).
//
// Thread safety: every method may be called from any thread at any time; the knobs are atomics
// (relaxed: a fault armed concurrently with a request may or may not hit that request).
// Ownership: the injector is borrowed by the engines and stores that use it and must outlive
// them.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>

#include "core/util/status.h"

namespace strata::storage {

enum class IoOp : uint8_t { kRead, kWrite };

class FaultInjector {
 public:
  void fail_nth_request(uint64_t n, int err = EIO);
  void enospc_after_bytes(uint64_t bytes);
  void eagain_next_requests(uint64_t n) { eagain_left_.store(n, std::memory_order_relaxed); }
  void short_transfers(bool on) { short_.store(on, std::memory_order_relaxed); }
  void set_latency_ns(uint64_t ns) { latency_ns_.store(ns, std::memory_order_relaxed); }
  void refuse_direct_io(bool refuse) { refuse_direct_.store(refuse, std::memory_order_relaxed); }
  void refuse_io_uring(bool refuse) { refuse_uring_.store(refuse, std::memory_order_relaxed); }
  void refuse_fallocate(bool refuse) { refuse_fallocate_.store(refuse, std::memory_order_relaxed); }
  // Disarms every fault (latency included).
  void clear();

  // Called by the engines. Returns 0 to let the request through, or the errno it must fail with.
  int on_request(IoOp op, uint64_t bytes);
  uint64_t latency_ns() const { return latency_ns_.load(std::memory_order_relaxed); }
  bool short_transfers() const { return short_.load(std::memory_order_relaxed); }
  bool direct_io_refused() const { return refuse_direct_.load(std::memory_order_relaxed); }
  bool io_uring_refused() const { return refuse_uring_.load(std::memory_order_relaxed); }
  bool fallocate_refused() const { return refuse_fallocate_.load(std::memory_order_relaxed); }
  // Number of requests failed so far by this injector.
  uint64_t injected() const { return injected_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kDisarmed = UINT64_MAX;
  std::atomic<uint64_t> fail_countdown_{kDisarmed};
  std::atomic<int> fail_errno_{EIO};
  std::atomic<uint64_t> write_budget_bytes_{kDisarmed};
  std::atomic<uint64_t> latency_ns_{0};
  std::atomic<uint64_t> eagain_left_{0};
  std::atomic<bool> short_{false};
  std::atomic<bool> refuse_direct_{false};
  std::atomic<bool> refuse_uring_{false};
  std::atomic<bool> refuse_fallocate_{false};
  std::atomic<uint64_t> injected_{0};
};

// XORs the byte at `offset` of `path` with `mask` (non-zero), durably (fdatasync), through an
// aligned read-modify-write so that it works on O_DIRECT-only paths too.
Status FlipByteOnDisk(const std::string& path, uint64_t offset, uint8_t mask = 0x01);

}  // namespace strata::storage
