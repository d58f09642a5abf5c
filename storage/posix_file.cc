#include "storage/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/util/option.h"
#include "core/util/sizes.h"

namespace strata::storage {
namespace {

// A transfer that makes no progress this many times in a row is reported, not retried forever.
constexpr int kMaxStalls = 64;

std::string Where(const char* op, const std::string& path, uint64_t offset) {
  return std::string(op) + " " + path + " offset " + HexOffset(offset);
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string HexOffset(uint64_t offset) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(offset));
  return text;
}

Status PreadFull(int fd, const std::string& path, uint64_t offset, void* buf, uint64_t bytes) {
  char* p = static_cast<char*>(buf);
  int stalls = 0;
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if ((errno == EINTR || errno == EAGAIN) && ++stalls < kMaxStalls) continue;
      return Status::FromErrno(errno, Where("read", path, offset));
    }
    if (n == 0) {
      return Status::OutOfRange(Where("read", path, offset) + ": end of file (" +
                                std::to_string(bytes) + " bytes short); the file was truncated");
    }
    stalls = 0;
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status PwriteFull(int fd, const std::string& path, uint64_t offset, const void* buf,
                  uint64_t bytes) {
  const char* p = static_cast<const char*>(buf);
  int stalls = 0;
  while (bytes > 0) {
    ssize_t n = ::pwrite(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 || (n == 0 && bytes > 0)) {
      int err = n < 0 ? errno : EIO;
      if ((err == EINTR || err == EAGAIN || n == 0) && ++stalls < kMaxStalls) continue;
      return Status::FromErrno(err, Where("write", path, offset));
    }
    stalls = 0;
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status CheckWritableDir(const std::string& dir, const std::string& flag) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return Status::NotFound(flag + " " + dir + " does not exist; create it or fix the path");
    }
    return Status::FromErrno(errno, flag + " " + dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(flag + " " + dir + " is not a directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::FailedPrecondition(flag + " " + dir +
                                      " is not writable by this user; fix its permissions or "
                                      "choose another directory");
  }
  return Status::Ok();
}

Result<uint64_t> FreeBytes(const std::string& path) {
  struct statvfs vfs;
  if (::statvfs(path.c_str(), &vfs) != 0) return Status::FromErrno(errno, "statvfs " + path);
  return static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
}

Status NoSpaceError(const std::string& dir, const std::string& what, uint64_t need_bytes,
                    uint64_t free_bytes, const std::string& advice, Option at_fault) {
  return AtFault(
      at_fault,
      Status::ResourceExhausted(Mention(Option::kNvmeDir) + " " + dir +
                                ": No space left on device (ENOSPC): " + what + " needs " +
                                FormatBytes(need_bytes) + " there but only " +
                                FormatBytes(free_bytes) + " are free; " + advice),
      {{"need_bytes", FaultNumber(need_bytes)}, {"free_bytes", FaultNumber(free_bytes)}});
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return Status::FromErrno(errno, "rename " + from + " to " + to);
  }
  const size_t slash = to.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : to.substr(0, slash + 1);
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(errno, "open directory " + dir);
  if (::fsync(fd.get()) != 0) return Status::FromErrno(errno, "fsync directory " + dir);
  return Status::Ok();
}

}  // namespace strata::storage
