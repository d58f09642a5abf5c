// POSIX file primitives shared by the storage layer: an owning fd, whole-length pread/pwrite
// loops, and the directory checks that turn a bad --nvme-dir into a one-line error.
//
// Contract:
// - UniqueFd owns one descriptor and closes it on destruction; move-only.
// - PreadFull/PwriteFull move exactly `bytes` or return a Status naming the path and offset.
//   They retry EINTR/EAGAIN and short transfers; a read that hits end of file is OutOfRange.
// - All functions are thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>

#include "core/util/option.h"
#include "core/util/status.h"

namespace strata::storage {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

Status PreadFull(int fd, const std::string& path, uint64_t offset, void* buf, uint64_t bytes);
Status PwriteFull(int fd, const std::string& path, uint64_t offset, const void* buf,
                  uint64_t bytes);

// Checks that `dir` exists, is a directory and is writable by this process. `flag` names the
// option in the message, as its mention (core/util/option.h): "{nvme_dir} /mnt/x does not
// exist; create it or fix the path", which the CLI shows as --nvme-dir and the C API as nvme_dir.
Status CheckWritableDir(const std::string& dir, const std::string& flag);

// Bytes available to this process on the filesystem holding `path`.
Result<uint64_t> FreeBytes(const std::string& path);

// The one wording of a directory without room, for every refusal or failure of the store for
// lack of disk space (checked ahead, or fallocate's own ENOSPC): ResourceExhausted
//   "{nvme_dir} <dir>: No space left on device (ENOSPC): <what> needs <need> there but only
//    <free> are free; <advice>"
// `what` names what needs the space ("the store's slot file (16 slots of 64 KiB)"). The Status
// is at fault of `at_fault` (Note [Options in messages] in core/util/option.h): {nvme_mem} where
// asking for less is a cure, else {nvme_dir}; its numbers are "need_bytes" and "free_bytes".
Status NoSpaceError(const std::string& dir, const std::string& what, uint64_t need_bytes,
                    uint64_t free_bytes, const std::string& advice, Option at_fault);

bool PathExists(const std::string& path);

// rename(from, to) and fsync of the directory holding `to`, so that the new name survives a
// crash.
Status RenameDurably(const std::string& from, const std::string& to);

// "0x4a000000": offsets in messages are hex so they line up with hexdump.
std::string HexOffset(uint64_t offset);

}  // namespace strata::storage
