// The small disk of a `strata stress` configuration that draws a disk fill: an ext4 filesystem in
// an image file of the configuration's scratch directory, on a loop device, that the driver fills
// while a child trains on it and frees before the next attempt (Note [Disk fills] in
// stress/stress_damage.cc).
//
// - Made with `mkfs.ext4 -m 0`: with ext4's default 5% of reserved blocks root writes on into
//   them, and the disk is not full when df says it is.
// - Needs root, mkfs.ext4, losetup, mount and a free loop device (found on PATH). Where one is
//   missing, Mount fails saying which step did, and ProbeLoopMount says so at the start of a soak.
// - The destructor unmounts the filesystem (retrying for up to 5 s while a child's files are
//   still being released, then lazily) and detaches its loop device, whatever happened; the
//   image stays in the scratch directory (with the store in it, for a failure report).
//
// Threads: one thread; the calls block on the tools they run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/util/status.h"

namespace strata::stress {

class StressDisk {
 public:
  // An ext4 of `bytes` in `dir`/disk.img, mounted on `dir`/disk (created).
  static Result<std::unique_ptr<StressDisk>> Mount(const std::string& dir, uint64_t bytes);
  ~StressDisk();
  StressDisk(const StressDisk&) = delete;
  StressDisk& operator=(const StressDisk&) = delete;

  // The mounted directory.
  const std::string& path() const { return path_; }
  // Takes every free byte (fallocate, then 4 KiB writes for what that left) in a file on the
  // disk; returns the bytes taken. Safe to call while a child writes to the disk.
  Result<uint64_t> fill();
  // Gives back what fill() took.
  Status unfill();

 private:
  StressDisk() = default;

  std::string image_;
  std::string path_;
  std::string device_;  // /dev/loopN once attached
  bool mounted_ = false;
};

// Whether this machine can loop-mount an ext4 image: makes, mounts, unmounts and deletes a tiny
// one in `scratch`. OK, or the failed step's error.
Status ProbeLoopMount(const std::string& scratch);

}  // namespace strata::stress
