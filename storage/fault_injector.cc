#include "storage/fault_injector.h"

#include <fcntl.h>
#include <unistd.h>

#include "storage/aligned_buffer.h"
#include "storage/posix_file.h"

namespace strata::storage {

void FaultInjector::fail_nth_request(uint64_t n, int err) {
  STRATA_CHECK(n > 0) << "fail_nth_request counts from 1";
  fail_errno_.store(err, std::memory_order_relaxed);
  fail_countdown_.store(n, std::memory_order_relaxed);
}

void FaultInjector::enospc_after_bytes(uint64_t bytes) {
  write_budget_bytes_.store(bytes, std::memory_order_relaxed);
}

void FaultInjector::clear() {
  fail_countdown_.store(kDisarmed, std::memory_order_relaxed);
  write_budget_bytes_.store(kDisarmed, std::memory_order_relaxed);
  latency_ns_.store(0, std::memory_order_relaxed);
  eagain_left_.store(0, std::memory_order_relaxed);
  short_.store(false, std::memory_order_relaxed);
  refuse_direct_.store(false, std::memory_order_relaxed);
  refuse_uring_.store(false, std::memory_order_relaxed);
  refuse_fallocate_.store(false, std::memory_order_relaxed);
}

int FaultInjector::on_request(IoOp op, uint64_t bytes) {
  uint64_t eagain = eagain_left_.load(std::memory_order_relaxed);
  while (eagain > 0) {
    if (eagain_left_.compare_exchange_weak(eagain, eagain - 1, std::memory_order_relaxed)) {
      injected_.fetch_add(1, std::memory_order_relaxed);
      return EAGAIN;
    }
  }
  // Count down the armed request counter; exactly one request sees it reach zero.
  uint64_t left = fail_countdown_.load(std::memory_order_relaxed);
  while (left != kDisarmed && left > 0) {
    if (fail_countdown_.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      if (left == 1) {
        fail_countdown_.store(kDisarmed, std::memory_order_relaxed);
        injected_.fetch_add(1, std::memory_order_relaxed);
        return fail_errno_.load(std::memory_order_relaxed);
      }
      break;
    }
  }
  if (op == IoOp::kWrite) {
    uint64_t budget = write_budget_bytes_.load(std::memory_order_relaxed);
    while (budget != kDisarmed) {
      if (budget < bytes) {
        injected_.fetch_add(1, std::memory_order_relaxed);
        return ENOSPC;
      }
      if (write_budget_bytes_.compare_exchange_weak(budget, budget - bytes,
                                                    std::memory_order_relaxed)) {
        break;
      }
    }
  }
  return 0;
}

Status FlipByteOnDisk(const std::string& path, uint64_t offset, uint8_t mask) {
  STRATA_CHECK(mask != 0) << "a zero mask flips nothing";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(errno, "open " + path);
  STRATA_ASSIGN_OR_RETURN(AlignedBuffer block, AlignedBuffer::Allocate(kIoAlignBytes));
  const uint64_t block_offset = offset / kIoAlignBytes * kIoAlignBytes;
  STRATA_RETURN_IF_ERROR(PreadFull(fd.get(), path, block_offset, block.data(), kIoAlignBytes));
  block.data()[offset - block_offset] ^= static_cast<char>(mask);
  STRATA_RETURN_IF_ERROR(PwriteFull(fd.get(), path, block_offset, block.data(), kIoAlignBytes));
  if (::fdatasync(fd.get()) != 0) return Status::FromErrno(errno, "fdatasync " + path);
  return Status::Ok();
}

}  // namespace strata::storage
