// The io_uring backend of IoEngine (Note [IoEngine backends] in io_engine.cc).
//
// Concurrency: mu_ guards the submission queue, pending_, in_flight_, the fixed-buffer table
// and stopping_. Any thread may prepare and submit SQEs while holding mu_; only the completion
// thread reads the completion queue (liburing allows one CQ reader concurrent with SQ writers).
// Callbacks run on the completion thread without mu_ held, so they may submit.
// Ownership: a Chunk belongs to pending_ or, once prepared, to the kernel (its pointer is the
// SQE user_data) until the completion thread reaps it.
#include <liburing.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/util/log.h"
#include "core/util/thread_name.h"
#include "storage/io_engine_base.h"

namespace strata::storage::internal {
namespace {

class UringIoEngine final : public IoEngineBase {
 public:
  explicit UringIoEngine(const IoEngineOptions& options) : IoEngineBase(options) {}

  Status init() {
    if (options_.faults != nullptr && options_.faults->io_uring_refused()) {
      return Status::FromErrno(EPERM, "io_uring_queue_init (refused by the fault injector)");
    }
    io_uring_params params;
    std::memset(&params, 0, sizeof(params));
    params.flags = IORING_SETUP_CQSIZE;
    params.cq_entries = 2 * options_.queue_depth + 2;  // + the stop sentinel: never overflows
    int r = io_uring_queue_init_params(options_.queue_depth + 1, &ring_, &params);
    if (r < 0)
      return Status::FromErrno(
          -r, "io_uring_queue_init (queue depth " + std::to_string(options_.queue_depth) + ")");
    ring_ready_ = true;
    r = io_uring_register_files_sparse(&ring_, options_.max_files);
    fixed_files_ = r == 0;
    if (!fixed_files_) {
      Logger("storage")->debug("io_uring fixed files unavailable ({}); using plain fds",
                               std::strerror(-r));
    }
    if (options_.max_fixed_buffers > 0) {
      r = io_uring_register_buffers_sparse(&ring_, options_.max_fixed_buffers);
      if (r == 0) {
        buffers_.resize(options_.max_fixed_buffers);
      } else {
        Logger("storage")->debug("io_uring fixed buffers unavailable ({}); using plain buffers",
                                 std::strerror(-r));
      }
    }
    completer_ = std::thread([this] {
      SetThreadName("io-complete");
      complete_loop();
    });
    return Status::Ok();
  }

  ~UringIoEngine() override {
    if (!ring_ready_) return;
    if (completer_.joinable()) {
      std::unique_lock<std::mutex> lock(mu_);
      idle_cv_.wait(lock, [this] { return live_chunks_ == 0; });
      // The sentinel (null user_data) tells the completion thread to leave.
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      STRATA_CHECK(sqe != nullptr) << "io_uring SQ full while idle";
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, nullptr);
      submit_locked();
      lock.unlock();
      completer_.join();
    }
    io_uring_queue_exit(&ring_);
  }

  Status register_buffer(void* buffer, uint64_t bytes) override {
    if (!IsIoAligned(buffer) || !IsIoAligned(bytes) || bytes == 0) {
      return Status::InvalidArgument("register_buffer: address and size must be 4 KiB multiples");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (buffers_.empty()) return Status::Ok();  // no fixed buffers on this kernel: plain I/O
    // The kernel caps one fixed buffer at 1 GiB: longer buffers take several table entries
    // (a request that straddles two of them uses plain I/O).
    char* const base = static_cast<char*>(buffer);
    for (uint64_t off = 0; off < bytes; off += kMaxFixedBufferBytes) {
      Status s =
          register_piece_locked(base, base + off, std::min(kMaxFixedBufferBytes, bytes - off));
      if (!s.ok()) {
        unregister_locked(base);
        return s;
      }
    }
    return Status::Ok();
  }

  void unregister_buffer(void* buffer) override {
    std::lock_guard<std::mutex> lock(mu_);
    unregister_locked(static_cast<char*>(buffer));
  }

  IoBackend backend() const override { return IoBackend::kUring; }

 protected:
  Status on_register_file(int index, int fd) override {
    if (!fixed_files_) return Status::Ok();
    int r = io_uring_register_files_update(&ring_, static_cast<unsigned>(index), &fd, 1);
    if (r < 0) return Status::FromErrno(-r, "io_uring register file");
    return Status::Ok();
  }
  void on_unregister_file(int index) override {
    if (!fixed_files_) return;
    int fd = -1;
    int r = io_uring_register_files_update(&ring_, static_cast<unsigned>(index), &fd, 1);
    STRATA_CHECK(r >= 0) << "io_uring unregister file: " << std::strerror(-r);
  }

  void dispatch(std::vector<Chunk*>& chunks) override {
    std::lock_guard<std::mutex> lock(mu_);
    live_chunks_ += chunks.size();
    for (Chunk* c : chunks) {
      c->buffer_index = find_buffer_locked(c->buffer, c->bytes);
      pending_.push_back(c);
    }
    // Transfers chained from callbacks are submitted together once the callbacks of this
    // round of completions have run: one io_uring_enter instead of one per callback.
    fill_locked(/*submit=*/tls_completing_ != this);
  }

 private:
  struct FixedBuffer {
    char* owner = nullptr;  // the address passed to register_buffer
    char* base = nullptr;
    uint64_t bytes = 0;
  };

  static constexpr uint64_t kMaxFixedBufferBytes = 1 * kGiB;

  Status register_piece_locked(char* owner, char* piece, uint64_t bytes) {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i].base != nullptr) continue;
      iovec iov{piece, bytes};
      int r =
          io_uring_register_buffers_update_tag(&ring_, static_cast<unsigned>(i), &iov, nullptr, 1);
      if (r < 0) {
        return Status::FromErrno(-r, "io_uring register buffer of " + std::to_string(bytes) +
                                         " bytes (raise RLIMIT_MEMLOCK, ulimit -l)");
      }
      buffers_[i] = {owner, piece, bytes};
      return Status::Ok();
    }
    return Status::ResourceExhausted("io_uring fixed-buffer table full (" +
                                     std::to_string(buffers_.size()) +
                                     " entries); raise max_fixed_buffers");
  }

  void unregister_locked(char* owner) {
    if (owner == nullptr) return;
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i].owner != owner) continue;
      iovec iov{nullptr, 0};
      int r =
          io_uring_register_buffers_update_tag(&ring_, static_cast<unsigned>(i), &iov, nullptr, 1);
      STRATA_CHECK(r >= 0) << "io_uring unregister buffer: " << std::strerror(-r);
      buffers_[i] = {};
    }
  }

  int find_buffer_locked(const char* p, uint64_t bytes) const {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const FixedBuffer& b = buffers_[i];
      if (b.base != nullptr && p >= b.base && p + bytes <= b.base + b.bytes) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // Moves pending chunks into the SQ while fewer than queue_depth are in flight, then submits.
  void fill_locked(bool submit = true) {
    unsigned prepared = 0;
    while (in_flight_ < options_.queue_depth && !pending_.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) break;
      Chunk* c = pending_.front();
      pending_.pop_front();
      const uint64_t bytes = prepare_attempt(c);
      if (c->injected_errno != 0) {
        io_uring_prep_nop(sqe);
      } else {
        const int fd = fixed_files_ ? c->file : c->fd;
        const unsigned n = static_cast<unsigned>(bytes);
        const bool read = c->transfer->op == IoOp::kRead;
        if (c->buffer_index >= 0) {
          count_fixed();
          if (read) {
            io_uring_prep_read_fixed(sqe, fd, c->buffer, n, c->offset, c->buffer_index);
          } else {
            io_uring_prep_write_fixed(sqe, fd, c->buffer, n, c->offset, c->buffer_index);
          }
        } else if (read) {
          io_uring_prep_read(sqe, fd, c->buffer, n, c->offset);
        } else {
          io_uring_prep_write(sqe, fd, c->buffer, n, c->offset);
        }
        if (fixed_files_) io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
      }
      io_uring_sqe_set_data(sqe, c);
      ++in_flight_;
      ++prepared;
    }
    unsubmitted_ += prepared;
    if (submit && unsubmitted_ > 0) submit_locked();
  }

  void submit_locked() {
    unsubmitted_ = 0;
    for (int attempt = 0;; ++attempt) {
      int r = io_uring_submit(&ring_);
      if (r >= 0) return;
      // The CQ is sized so that it cannot overflow; EBUSY/EAGAIN are transient kernel memory
      // pressure. Anything else means a malformed SQE: a bug here.
      STRATA_CHECK((r == -EINTR || r == -EAGAIN || r == -EBUSY) && attempt < 1000000)
          << "io_uring_submit: " << std::strerror(-r);
      std::this_thread::yield();
    }
  }

  void complete_loop() {
    tls_completing_ = this;
    std::vector<std::pair<Chunk*, int>> finished;  // errno 0 = done, -1 = end of file
    std::vector<Chunk*> requeue;
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      int r = io_uring_wait_cqe(&ring_, &cqe);
      if (r == -EINTR || r == -EAGAIN) continue;
      STRATA_CHECK(r == 0) << "io_uring_wait_cqe: " << std::strerror(-r);
      bool stop = false;
      {
        // Holding mu_ while reading the chunks also orders this thread after the submitter
        // that prepared them (the kernel ring is invisible to ThreadSanitizer).
        std::lock_guard<std::mutex> lock(mu_);
        unsigned seen = 0;
        unsigned head;
        io_uring_for_each_cqe(&ring_, head, cqe) {
          ++seen;
          auto* c = static_cast<Chunk*>(io_uring_cqe_get_data(cqe));
          if (c == nullptr) {
            stop = true;
            continue;
          }
          classify(c, cqe->res, finished, requeue);
        }
        io_uring_cq_advance(&ring_, seen);
        in_flight_ -= seen - (stop ? 1 : 0);
        for (auto it = requeue.rbegin(); it != requeue.rend(); ++it) pending_.push_front(*it);
        requeue.clear();
        fill_locked();
      }
      for (auto& [c, err] : finished) {
        apply_latency(c);
        finish_chunk(c, err < 0 ? 0 : err, /*eof=*/err < 0);
      }
      if (!finished.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (unsubmitted_ > 0) submit_locked();
        live_chunks_ -= finished.size();
        if (live_chunks_ == 0) idle_cv_.notify_all();
      }
      finished.clear();
      if (stop) return;
    }
  }

  void classify(Chunk* c, int res, std::vector<std::pair<Chunk*, int>>& finished,
                std::vector<Chunk*>& requeue) {
    if (c->injected_errno != 0) {  // the NOP stood in for a request that failed so
      res = -c->injected_errno;
      c->injected_errno = 0;
    }
    if (res > 0) {
      account_progress(c, static_cast<uint64_t>(res));
      c->retries = 0;
      if (c->bytes == 0) {
        finished.emplace_back(c, 0);
      } else {
        count_requeue();
        requeue.push_back(c);
      }
      return;
    }
    const bool read = c->transfer->op == IoOp::kRead;
    if (res == 0 && read) {
      finished.emplace_back(c, -1);
      return;
    }
    const int err = res == 0 ? EIO : -res;
    if ((err == EAGAIN || err == EINTR || res == 0) && ++c->retries < IoEngine::kMaxRetries) {
      count_requeue();
      requeue.push_back(c);
      return;
    }
    finished.emplace_back(c, err);
  }

  // The engine whose completion thread is the current thread, if any.
  static thread_local UringIoEngine* tls_completing_;

  io_uring ring_;
  bool ring_ready_ = false;
  bool fixed_files_ = false;
  std::thread completer_;

  std::mutex mu_;
  std::condition_variable idle_cv_;
  std::deque<Chunk*> pending_;
  uint32_t in_flight_ = 0;
  uint32_t unsubmitted_ = 0;  // SQEs prepared but not yet passed to the kernel
  uint64_t live_chunks_ = 0;  // dispatched and not yet finished (callbacks included)
  std::vector<FixedBuffer> buffers_;
};

thread_local UringIoEngine* UringIoEngine::tls_completing_ = nullptr;

}  // namespace

Result<std::unique_ptr<IoEngine>> CreateUringIoEngine(const IoEngineOptions& options) {
  auto engine = std::make_unique<UringIoEngine>(options);
  Status s = engine->init();
  if (!s.ok()) return Status::NotSupported(s.message());
  return std::unique_ptr<IoEngine>(std::move(engine));
}

}  // namespace strata::storage::internal
