#include "bench/raw_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <future>
#include <vector>

namespace strata::bench {

Result<std::unique_ptr<RawIo>> RawIo::Create(const std::string& dir, uint64_t page, uint64_t pages,
                                             void* buffer) {
  auto raw = std::unique_ptr<RawIo>(new RawIo());
  raw->page_ = page;
  raw->pages_ = pages;
  raw->buffer_ = static_cast<char*>(buffer);
  const std::string path = dir + "/raw.bin";
  raw->fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644));
  if (!raw->fd_.valid()) return Status::FromErrno(errno, "open " + path + " O_DIRECT");
  if (int err = ::posix_fallocate(raw->fd_.get(), 0, off_t(page * pages)); err != 0) {
    return Status::FromErrno(err, "fallocate " + path);
  }
  STRATA_ASSIGN_OR_RETURN(raw->engine_, storage::IoEngine::Create(storage::IoEngineOptions{}));
  STRATA_ASSIGN_OR_RETURN(raw->file_, raw->engine_->register_file(raw->fd_.get(), path));
  STRATA_RETURN_IF_ERROR(raw->engine_->register_buffer(buffer, page * pages));
  return raw;
}

RawIo::~RawIo() {
  if (engine_) {
    engine_->unregister_buffer(buffer_);
    if (file_ >= 0) engine_->unregister_file(file_);
  }
}

Result<double> RawIo::run(storage::IoOp op) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<Status>> done;
  for (uint64_t p = 0; p < pages_; ++p) {
    done.push_back(op == storage::IoOp::kWrite
                       ? engine_->write(file_, p * page_, buffer_ + p * page_, page_)
                       : engine_->read(file_, p * page_, buffer_ + p * page_, page_));
  }
  for (auto& f : done) STRATA_RETURN_IF_ERROR(f.get());
  if (op == storage::IoOp::kWrite) STRATA_RETURN_IF_ERROR(engine_->sync_file(file_));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace strata::bench
