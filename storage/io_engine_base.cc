#include "storage/io_engine_base.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "storage/posix_file.h"

namespace strata::storage::internal {

IoEngineBase::IoEngineBase(const IoEngineOptions& options)
    : options_(options), files_(options.max_files) {}

uint64_t IoEngineBase::NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

Result<int> IoEngineBase::register_file(int fd, const std::string& path) {
  if (fd < 0) return Status::InvalidArgument("register_file " + path + ": invalid fd");
  std::lock_guard<std::mutex> lock(files_mu_);
  for (size_t i = 0; i < files_.size(); ++i) {
    if (files_[i].fd >= 0) continue;
    STRATA_RETURN_IF_ERROR(on_register_file(static_cast<int>(i), fd));
    files_[i] = {fd, path};
    return static_cast<int>(i);
  }
  return Status::ResourceExhausted("register_file " + path + ": all " +
                                   std::to_string(files_.size()) +
                                   " file slots of the I/O engine are in use; raise max_files");
}

void IoEngineBase::unregister_file(int file) {
  std::lock_guard<std::mutex> lock(files_mu_);
  STRATA_CHECK(file >= 0 && static_cast<size_t>(file) < files_.size() && files_[file].fd >= 0)
      << "unregister_file of unknown file index " << file;
  on_unregister_file(file);
  files_[file] = FileEntry{};
}

std::string IoEngineBase::file_path(int file) const {
  std::lock_guard<std::mutex> lock(files_mu_);
  if (file < 0 || static_cast<size_t>(file) >= files_.size())
    return "<file " + std::to_string(file) + ">";
  return files_[file].path;
}

Status IoEngineBase::submit(std::span<IoRequest> requests) {
  // Validate everything first: either all requests start or none does.
  std::vector<int> fds(requests.size());
  {
    std::lock_guard<std::mutex> lock(files_mu_);
    for (size_t i = 0; i < requests.size(); ++i) {
      const IoRequest& r = requests[i];
      if (r.file < 0 || static_cast<size_t>(r.file) >= files_.size() || files_[r.file].fd < 0) {
        return Status::InvalidArgument("I/O on unregistered file index " + std::to_string(r.file));
      }
      const std::string& path = files_[r.file].path;
      const char* what = r.op == IoOp::kRead ? "read " : "write ";
      if (!IsIoAligned(r.offset) || !IsIoAligned(r.bytes) || r.bytes == 0 ||
          !IsIoAligned(r.buffer)) {
        return Status::InvalidArgument(
            what + path + " offset " + HexOffset(r.offset) + " (" + std::to_string(r.bytes) +
            " bytes): offset, length and buffer address must be non-zero multiples of 4096 "
            "for direct I/O");
      }
      if (!r.done) return Status::InvalidArgument(what + path + ": request without a callback");
      fds[i] = files_[r.file].fd;
    }
  }
  std::vector<Chunk*> chunks;
  const uint64_t step = options_.request_bytes;
  for (size_t i = 0; i < requests.size(); ++i) {
    IoRequest& r = requests[i];
    auto* t = new Transfer{r.op, r.file, r.offset, r.bytes, std::move(r.done), {}, {}, {}};
    const uint64_t n = (r.bytes + step - 1) / step;
    t->chunks_left.store(static_cast<uint32_t>(n), std::memory_order_relaxed);
    for (uint64_t k = 0; k < n; ++k) {
      auto* c = new Chunk;
      c->transfer = t;
      c->fd = fds[i];
      c->file = r.file;
      c->offset = c->request_offset = r.offset + k * step;
      c->buffer = static_cast<char*>(r.buffer) + k * step;
      c->bytes = c->request_bytes = std::min(step, r.bytes - k * step);
      chunks.push_back(c);
    }
  }
  requests_.fetch_add(chunks.size(), std::memory_order_relaxed);
  dispatch(chunks);
  return Status::Ok();
}

Status IoEngineBase::sync_file(int file) {
  int fd;
  std::string path;
  {
    std::lock_guard<std::mutex> lock(files_mu_);
    if (file < 0 || static_cast<size_t>(file) >= files_.size() || files_[file].fd < 0) {
      return Status::InvalidArgument("sync of unregistered file index " + std::to_string(file));
    }
    fd = files_[file].fd;
    path = files_[file].path;
  }
  while (::fdatasync(fd) != 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "fdatasync " + path);
  }
  return Status::Ok();
}

IoEngineStats IoEngineBase::stats() const {
  IoEngineStats s;
  s.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  s.requests = requests_.load(std::memory_order_relaxed);
  s.requeued = requeued_.load(std::memory_order_relaxed);
  s.fixed_buffer_requests = fixed_requests_.load(std::memory_order_relaxed);
  s.failed_transfers = failed_transfers_.load(std::memory_order_relaxed);
  return s;
}

uint64_t IoEngineBase::prepare_attempt(Chunk* chunk) {
  chunk->injected_errno = 0;
  FaultInjector* faults = options_.faults;
  if (faults == nullptr) return chunk->bytes;
  const bool first = chunk->offset == chunk->request_offset && chunk->retries == 0;
  if (first) chunk->issued_ns = faults->latency_ns() > 0 ? NowNs() : 0;
  chunk->injected_errno = faults->on_request(chunk->transfer->op, chunk->bytes);
  if (faults->short_transfers() && chunk->bytes >= 2 * kIoAlignBytes) {
    return chunk->bytes / 2 / kIoAlignBytes * kIoAlignBytes;
  }
  return chunk->bytes;
}

void IoEngineBase::apply_latency(const Chunk* chunk) const {
  if (options_.faults == nullptr || chunk->issued_ns == 0) return;
  const uint64_t due = chunk->issued_ns + options_.faults->latency_ns();
  const uint64_t now = NowNs();
  if (due > now) std::this_thread::sleep_for(std::chrono::nanoseconds(due - now));
}

void IoEngineBase::account_progress(Chunk* chunk, uint64_t moved) {
  (chunk->transfer->op == IoOp::kRead ? bytes_read_ : bytes_written_)
      .fetch_add(moved, std::memory_order_relaxed);
  chunk->offset += moved;
  chunk->buffer += moved;
  chunk->bytes -= moved;
}

void IoEngineBase::finish_chunk(Chunk* chunk, int err, bool eof) {
  Transfer* t = chunk->transfer;
  if (err != 0 || eof) {
    const std::string what = std::string(t->op == IoOp::kRead ? "read " : "write ") +
                             file_path(chunk->file) + " offset " +
                             HexOffset(chunk->request_offset) + " (" +
                             std::to_string(chunk->request_bytes) + " bytes)";
    Status s = eof ? Status::OutOfRange(what + ": end of file at " + HexOffset(chunk->offset) +
                                        "; the file is shorter than expected")
                   : Status::FromErrno(err, what);
    std::lock_guard<std::mutex> lock(t->mu);
    if (t->error.ok()) t->error = std::move(s);
  }
  delete chunk;
  if (t->chunks_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Last chunk: every other chunk's error write happened-before the acq_rel decrement.
  Status result;
  {
    std::lock_guard<std::mutex> lock(t->mu);
    result = std::move(t->error);
  }
  if (!result.ok()) failed_transfers_.fetch_add(1, std::memory_order_relaxed);
  IoCallback done = std::move(t->done);
  delete t;
  done(result);
}

}  // namespace strata::storage::internal
