// Internal to storage/: what both IoEngine backends share. Not for use above storage/.
//
// A transfer (one IoRequest) is split into chunks of at most request_bytes. Each chunk is one
// request to the OS; the transfer's callback runs when its last chunk finishes, with the first
// error any chunk saw. IoEngineBase owns the file table, the validation at the API, the
// splitting, fault injection and the statistics; a backend only moves chunks.
//
// Threads: files_mu_ guards the file table; stats are relaxed atomics; a Chunk is touched by
// one thread at a time (handed over through the backend's queue).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "storage/io_engine.h"

namespace strata::storage::internal {

struct Transfer {
  IoOp op;
  int file;
  uint64_t offset;
  uint64_t bytes;
  IoCallback done;
  std::atomic<uint32_t> chunks_left{0};
  std::mutex mu;  // guards error
  Status error;
};

struct Chunk {
  Transfer* transfer = nullptr;
  int fd = -1;                  // the OS fd (sync backend, and io_uring without fixed files)
  int file = -1;                // engine file index
  uint64_t offset = 0;          // of the next byte to move
  char* buffer = nullptr;       // next byte to move
  uint64_t bytes = 0;           // bytes still to move
  uint64_t request_offset = 0;  // where this chunk started, for error messages
  uint64_t request_bytes = 0;
  int buffer_index = -1;   // io_uring fixed buffer, or -1
  int retries = 0;         // consecutive no-progress attempts
  int injected_errno = 0;  // set by the fault injector: fail without touching the disk
  uint64_t issued_ns = 0;  // for injected latency
};

class IoEngineBase : public IoEngine {
 public:
  explicit IoEngineBase(const IoEngineOptions& options);

  Result<int> register_file(int fd, const std::string& path) override;
  void unregister_file(int file) override;
  Status submit(std::span<IoRequest> requests) override;
  Status sync_file(int file) override;
  const IoEngineOptions& options() const override { return options_; }
  IoEngineStats stats() const override;

 protected:
  // Hands chunks to the backend, which owns them until it calls finish_chunk() for each.
  virtual void dispatch(std::vector<Chunk*>& chunks) = 0;
  // Backend hooks for file registration (io_uring mirrors the table in the kernel).
  virtual Status on_register_file(int /*index*/, int /*fd*/) { return Status::Ok(); }
  virtual void on_unregister_file(int /*index*/) {}

  // Consults the fault injector before each attempt at a chunk. Returns the bytes to issue
  // now (all that is left, or half of it for an injected short transfer); when it sets
  // chunk->injected_errno the attempt must complete with that errno without touching the disk.
  uint64_t prepare_attempt(Chunk* chunk);
  // Sleeps out the injected latency still owed by a chunk (called before finishing it).
  void apply_latency(const Chunk* chunk) const;
  // Accounts `moved` bytes of a chunk that made progress.
  void account_progress(Chunk* chunk, uint64_t moved);
  // Ends a chunk: err == 0 means all its bytes moved; else err is the errno (or -1 with
  // `eof` for a read past the end of the file). Runs the transfer callback if it was the last.
  void finish_chunk(Chunk* chunk, int err, bool eof = false);
  void count_requeue() { requeued_.fetch_add(1, std::memory_order_relaxed); }
  void count_fixed() { fixed_requests_.fetch_add(1, std::memory_order_relaxed); }
  std::string file_path(int file) const;
  static uint64_t NowNs();

  const IoEngineOptions options_;

 private:
  struct FileEntry {
    int fd = -1;
    std::string path;
  };
  mutable std::mutex files_mu_;
  std::vector<FileEntry> files_;  // fd -1 = free

  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> requeued_{0};
  std::atomic<uint64_t> fixed_requests_{0};
  std::atomic<uint64_t> failed_transfers_{0};
};

}  // namespace strata::storage::internal

namespace strata::storage::internal {

// Backend factories (uring_io_engine.cc, sync_io_engine.cc). Options are already validated.
Result<std::unique_ptr<IoEngine>> CreateUringIoEngine(const IoEngineOptions& options);
std::unique_ptr<IoEngine> CreateSyncIoEngine(const IoEngineOptions& options);

}  // namespace strata::storage::internal
