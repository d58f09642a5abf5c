#include "storage/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/util/option.h"

namespace strata::storage {
namespace {

// The pid the owner wrote into its label, or "" when there is none (yet).
std::string OwnerPid(const std::string& label) {
  UniqueFd fd(::open(label.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  char buf[32] = {};
  const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string pid(buf, static_cast<size_t>(n));
  while (!pid.empty() && pid.back() == '\n') pid.pop_back();
  if (pid.empty()) return "";
  for (char c : pid) {
    if (c < '0' || c > '9') return "";
  }
  return pid;
}

Status WriteLabel(const std::string& label) {
  UniqueFd fd(::open(label.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno(errno, "write the store's owner label " + label);
  const std::string pid = std::to_string(::getpid()) + "\n";
  return PwriteFull(fd.get(), label, 0, pid.data(), pid.size());
}

}  // namespace

StoreLock& StoreLock::operator=(StoreLock&& other) noexcept {
  if (this != &other) {
    release();
    dir_fds_ = std::move(other.dir_fds_);
    labels_ = std::move(other.labels_);
  }
  return *this;
}

std::string StoreLock::LabelPathFor(const std::string& dir) {
  if (!dir.empty() && dir.back() == '/') return dir + kStoreLockName;
  return dir + "/" + kStoreLockName;
}

Result<StoreLock> StoreLock::Acquire(const std::vector<std::string>& dirs) {
  StoreLock lock;
  for (const std::string& dir : dirs) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) {
      return AtFault(Option::kNvmeDir,
                     Status::FromErrno(
                         errno, "open " + Mention(Option::kNvmeDir) + " " + dir + " to lock it"));
    }
    const std::string label = LabelPathFor(dir);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        return AtFault(Option::kNvmeDir,
                       Status::FromErrno(err, "lock " + Mention(Option::kNvmeDir) + " " + dir));
      }
      const std::string pid = OwnerPid(label);
      std::vector<std::pair<std::string, int64_t>> numbers;
      if (!pid.empty() && pid.size() < 19) numbers.emplace_back("pid", std::stoll(pid));
      return AtFault(
          Option::kNvmeDir,
          Status::FailedPrecondition(
              Mention(Option::kNvmeDir) + " " + dir + " is in use by " +
              (pid.empty() ? std::string("another process") : "pid " + pid) +
              ": one run owns a store at a time; wait for that run to end, or give another " +
              Mention(Option::kNvmeDir)),
          std::move(numbers));
    }
    lock.dir_fds_.push_back(std::move(fd));
    STRATA_RETURN_IF_ERROR(WriteLabel(label));
    lock.labels_.push_back(label);
  }
  return lock;
}

void StoreLock::release() {
  for (const std::string& label : labels_) ::unlink(label.c_str());
  labels_.clear();
  dir_fds_.clear();  // closing the descriptions releases the locks
}

}  // namespace strata::storage
