// The pread/pwrite backend of IoEngine (Note [IoEngine backends] in io_engine.cc).
// Concurrency: mu_ guards queue_ and stopping_; each worker owns the chunk it popped.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/util/thread_name.h"
#include "storage/io_engine_base.h"

namespace strata::storage::internal {
namespace {

class SyncIoEngine final : public IoEngineBase {
 public:
  explicit SyncIoEngine(const IoEngineOptions& options) : IoEngineBase(options) {
    const uint32_t threads = std::min<uint32_t>(options.queue_depth, 64);
    for (uint32_t i = 0; i < threads; ++i) workers_.emplace_back([this] {
      SetThreadName("io-sync");
      run();
    });
  }

  ~SyncIoEngine() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();  // workers drain the queue before leaving
  }

  Status register_buffer(void* buffer, uint64_t bytes) override {
    if (!IsIoAligned(buffer) || !IsIoAligned(bytes) || bytes == 0) {
      return Status::InvalidArgument("register_buffer: address and size must be 4 KiB multiples");
    }
    return Status::Ok();
  }
  void unregister_buffer(void*) override {}
  IoBackend backend() const override { return IoBackend::kSync; }

 protected:
  void dispatch(std::vector<Chunk*>& chunks) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Chunk* c : chunks) queue_.push_back(c);
    }
    if (chunks.size() == 1) {
      cv_.notify_one();
    } else {
      cv_.notify_all();
    }
  }

 private:
  void run() {
    for (;;) {
      Chunk* chunk;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        chunk = queue_.front();
        queue_.pop_front();
      }
      execute(chunk);
    }
  }

  void execute(Chunk* chunk) {
    const bool is_read = chunk->transfer->op == IoOp::kRead;
    while (chunk->bytes > 0) {
      const uint64_t bytes = prepare_attempt(chunk);
      ssize_t n;
      int err = 0;
      if (chunk->injected_errno != 0) {
        n = -1;
        err = chunk->injected_errno;
      } else {
        n = is_read ? ::pread(chunk->fd, chunk->buffer, bytes, static_cast<off_t>(chunk->offset))
                    : ::pwrite(chunk->fd, chunk->buffer, bytes, static_cast<off_t>(chunk->offset));
        err = n < 0 ? errno : 0;
      }
      if (n > 0) {
        account_progress(chunk, static_cast<uint64_t>(n));
        chunk->retries = 0;
        if (chunk->bytes > 0) count_requeue();
        continue;
      }
      if (n == 0 && is_read) {
        apply_latency(chunk);
        finish_chunk(chunk, 0, /*eof=*/true);
        return;
      }
      if (n == 0) err = EIO;
      if ((err == EINTR || err == EAGAIN || n == 0) && ++chunk->retries < IoEngine::kMaxRetries) {
        count_requeue();
        continue;
      }
      apply_latency(chunk);
      finish_chunk(chunk, err);
      return;
    }
    apply_latency(chunk);
    finish_chunk(chunk, 0);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk*> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<IoEngine> CreateSyncIoEngine(const IoEngineOptions& options) {
  return std::make_unique<SyncIoEngine>(options);
}

}  // namespace strata::storage::internal
