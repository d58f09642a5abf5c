// StoreLock: one owner per NVMe store. The owning process holds flock(LOCK_EX) on every
// directory of the store for as long as the store is open, and writes its pid into
// <dir>/strata.lock, so that a second process is told who owns it.
//
// Contract:
// - Acquire() locks every directory, in the order given, without blocking. It is the first
//   thing a store open does: a process that cannot get the lock has touched nothing.
// - A directory locked by another process is FailedPrecondition "... is in use by pid N ...",
//   with the pid the owner wrote ("another process" while it cannot be read).
// - The lock is on the directory itself, not on a file in it: flock locks vanish when the owner
//   exits, however it exits (SIGKILL included), so a killed run never leaves a stale lock, and
//   no lock file has to be created or unlinked, which would race with a concurrent Acquire. The
//   pid file is only a label: written after the lock is taken, removed before it is released; a
//   killed owner's stale label is overwritten by the next owner.
// - Within one process a second Acquire of a locked directory fails too (each Acquire opens its
//   own file description).
// - Move-only; the destructor removes the labels and releases the locks. One owner thread.
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"
#include "storage/posix_file.h"

namespace strata::storage {

inline constexpr const char* kStoreLockName = "strata.lock";

class StoreLock {
 public:
  StoreLock() = default;
  StoreLock(StoreLock&& other) noexcept = default;
  StoreLock& operator=(StoreLock&& other) noexcept;
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;
  ~StoreLock() { release(); }

  // The pid label of `dir`'s lock.
  static std::string LabelPathFor(const std::string& dir);
  static Result<StoreLock> Acquire(const std::vector<std::string>& dirs);

 private:
  void release();
  std::vector<UniqueFd> dir_fds_;
  std::vector<std::string> labels_;
};

}  // namespace strata::storage
