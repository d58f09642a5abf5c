// IoEngine: asynchronous, aligned reads and writes of host buffers to files on NVMe.
//
// Two backends behind one interface (Note [IoEngine backends] in io_engine.cc):
//   - io_uring (liburing): registered ("fixed") files and buffers, batched submission, at most
//     queue_depth requests in flight, one completion thread;
//   - sync: a pool of queue_depth threads doing pread/pwrite, used where io_uring cannot be
//     set up (old kernel, seccomp, io_uring_disabled) or the files are not opened O_DIRECT.
// Create() probes io_uring and falls back to the sync backend, saying so once in the log.
//
// Transfers:
//   - offset, length and buffer address must all be multiples of kIoAlignBytes (4 KiB); the
//     check is at the API and a violation is InvalidArgument returned by submit().
//   - A transfer longer than request_bytes is split into requests of at most request_bytes;
//     short reads/writes and -EAGAIN/-EINTR are requeued until every byte has moved (a request
//     that makes no progress kMaxRetries times in a row fails with the last error).
//   - Each transfer completes exactly once with a Status. On failure the message names the
//     operation, file path, offset and length of the failing request, e.g.
//     "write /mnt/nvme0/strata.slots offset 0x4a000000 (1048576 bytes): No space left on device".
//
// Threads and lifetimes:
//   - Every method is thread-safe. Callbacks run on an engine thread (the completion thread for
//     io_uring, a pool thread for sync); they may call submit() but must not block waiting for
//     another transfer of the same engine.
//   - The buffer of a transfer must stay valid (and, for writes, unchanged) until its callback
//     has run. Files and buffers registered with the engine are borrowed, not owned.
//   - The destructor waits for every submitted transfer to complete and its callback to return.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>

#include "core/util/sizes.h"
#include "core/util/status.h"
#include "storage/aligned_buffer.h"
#include "storage/fault_injector.h"

namespace strata::storage {

enum class IoBackend : uint8_t { kAuto, kUring, kSync };
const char* IoBackendName(IoBackend backend);

struct IoEngineOptions {
  IoBackend backend = IoBackend::kAuto;
  // Requests in flight at once (io_uring SQ size, or sync pool threads: min(queue_depth, 64)).
  uint32_t queue_depth = 32;
  // Largest single request; longer transfers are split. Multiple of 4 KiB.
  uint64_t request_bytes = 1 * kMiB;
  // Capacity of the registered file and buffer tables.
  uint32_t max_files = 64;
  uint32_t max_fixed_buffers = 256;
  // Borrowed; consulted once per request when set. Must outlive the engine.
  FaultInjector* faults = nullptr;
};

using IoCallback = std::function<void(const Status&)>;

struct IoRequest {
  IoOp op = IoOp::kRead;
  int file = -1;           // index returned by register_file
  uint64_t offset = 0;     // bytes, 4 KiB aligned
  void* buffer = nullptr;  // 4 KiB aligned; const for writes
  uint64_t bytes = 0;      // 4 KiB multiple, > 0
  IoCallback done;         // called exactly once when submit() returned OK
};

struct IoEngineStats {
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t requests = 0;  // after splitting
  uint64_t requeued = 0;  // short transfers and -EAGAIN/-EINTR resubmitted
  uint64_t fixed_buffer_requests = 0;
  uint64_t failed_transfers = 0;
};

class IoEngine {
 public:
  // Maximum consecutive no-progress retries (EAGAIN, EINTR, zero-byte write) of one request.
  static constexpr int kMaxRetries = 32;

  // Builds the requested backend; kAuto tries io_uring and falls back to sync (logged once per
  // process). kUring fails with NotSupported if io_uring cannot be set up. Invalid options
  // (queue_depth 0, request_bytes not a 4 KiB multiple) are InvalidArgument.
  static Result<std::unique_ptr<IoEngine>> Create(const IoEngineOptions& options);

  virtual ~IoEngine() = default;
  IoEngine(const IoEngine&) = delete;
  IoEngine& operator=(const IoEngine&) = delete;

  // Registers an open fd (borrowed: keep it open until unregister_file or engine destruction)
  // and returns its index for IoRequest::file. `path` names the file in error messages.
  // ResourceExhausted when max_files are registered.
  virtual Result<int> register_file(int fd, const std::string& path) = 0;
  // The caller guarantees no transfer on `file` is in flight.
  virtual void unregister_file(int file) = 0;

  // Registers a host buffer (4 KiB aligned address and size) so that requests inside it use
  // io_uring fixed-buffer reads/writes (pages pinned once instead of per request). Requests on
  // unregistered memory still work, more slowly. A no-op on the sync backend.
  virtual Status register_buffer(void* buffer, uint64_t bytes) = 0;
  // The caller guarantees no transfer on the buffer is in flight.
  virtual void unregister_buffer(void* buffer) = 0;

  // Starts every request of `requests` (one submission to the kernel where possible). Either
  // all are validated and started (OK; each `done` will run), or none is (the first invalid
  // request's error is returned and no callback runs).
  [[nodiscard]] virtual Status submit(std::span<IoRequest> requests) = 0;

  // Conveniences over submit(). The future holds the transfer's Status; a validation error is
  // returned through the future too.
  std::future<Status> read(int file, uint64_t offset, void* buffer, uint64_t bytes);
  std::future<Status> write(int file, uint64_t offset, const void* buffer, uint64_t bytes);

  // fdatasync of a registered file, on the calling thread.
  [[nodiscard]] virtual Status sync_file(int file) = 0;

  virtual IoBackend backend() const = 0;
  virtual const IoEngineOptions& options() const = 0;
  virtual IoEngineStats stats() const = 0;

 protected:
  IoEngine() = default;
};

}  // namespace strata::storage
