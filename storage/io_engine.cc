// Note [IoEngine backends]
// io_uring is the fast path: requests are prepared under one submission lock, at most
// queue_depth are in flight, and one completion thread reaps CQEs in batches, requeues short or
// interrupted requests and refills the submission queue. Page buffers registered as fixed
// buffers skip the per-request page pinning. Where io_uring cannot be set up (kernel without
// it, io_uring_disabled, seccomp, RLIMIT_MEMLOCK too low) or the files could not be opened with
// O_DIRECT, a pool of threads doing pread/pwrite gives the same semantics more slowly. Both
// share IoEngineBase (validation, splitting, fault injection, error text), so a test of one
// contract covers both.
#include "storage/io_engine.h"

#include <atomic>
#include <memory>

#include "core/util/log.h"
#include "storage/io_engine_base.h"

namespace strata::storage {

const char* IoBackendName(IoBackend backend) {
  switch (backend) {
    case IoBackend::kAuto:
      return "auto";
    case IoBackend::kUring:
      return "io_uring";
    case IoBackend::kSync:
      return "sync";
  }
  return "unknown";
}

Result<std::unique_ptr<IoEngine>> IoEngine::Create(const IoEngineOptions& options) {
  if (options.queue_depth == 0 || options.queue_depth > 4096) {
    return Status::InvalidArgument("I/O queue depth " + std::to_string(options.queue_depth) +
                                   " is out of range; use 1 to 4096");
  }
  if (options.request_bytes == 0 || !IsIoAligned(options.request_bytes)) {
    return Status::InvalidArgument("I/O request size " + std::to_string(options.request_bytes) +
                                   " bytes is not a positive multiple of 4096");
  }
  if (options.max_files == 0) return Status::InvalidArgument("max_files must be positive");
  if (options.backend == IoBackend::kSync) return internal::CreateSyncIoEngine(options);
  Result<std::unique_ptr<IoEngine>> uring = internal::CreateUringIoEngine(options);
  if (uring.ok() || options.backend == IoBackend::kUring) return uring;
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    Logger("storage")->info("io_uring unavailable ({}); using the pread/pwrite thread pool",
                            uring.status().message());
  }
  return internal::CreateSyncIoEngine(options);
}

namespace {

std::future<Status> SubmitOne(IoEngine& engine, IoOp op, int file, uint64_t offset, void* buffer,
                              uint64_t bytes) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> future = promise->get_future();
  IoRequest request{op,     file,  offset,
                    buffer, bytes, [promise](const Status& s) { promise->set_value(s); }};
  Status s = engine.submit(std::span<IoRequest>(&request, 1));
  if (!s.ok()) promise->set_value(s);
  return future;
}

}  // namespace

std::future<Status> IoEngine::read(int file, uint64_t offset, void* buffer, uint64_t bytes) {
  return SubmitOne(*this, IoOp::kRead, file, offset, buffer, bytes);
}

std::future<Status> IoEngine::write(int file, uint64_t offset, const void* buffer, uint64_t bytes) {
  // The engine never writes into the buffer of a write request.
  return SubmitOne(*this, IoOp::kWrite, file, offset, const_cast<void*>(buffer), bytes);
}

}  // namespace strata::storage
