// LoopMount: a small ext4 filesystem of a test's own, on a loop device, for disk-full tests.
// Shared by every test folder.
//
// - Made with `mkfs.ext4 -m 0`: with ext4's default 5% of reserved blocks, root writes on into
//   them after df says 0, and a "full" disk is not full (docs: /work/shared/MACHINE.md).
// - Needs root, mkfs.ext4, losetup and a free loop device; where any is missing ok() is false
//   and why() says which step failed, for GTEST_SKIP.
// - The destructor unmounts the filesystem and detaches the loop device, whatever the test did
//   (retrying for up to 5 s, then lazily, if something still holds it open); the image lives in
//   the caller's directory and goes with it.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace strata::test_support {

class LoopMount {
 public:
  // An ext4 of `bytes` in `dir`/fs.img, mounted on `dir`/mnt.
  LoopMount(const std::string& dir, uint64_t bytes) : image_(dir + "/fs.img"), path_(dir + "/mnt") {
    std::filesystem::create_directories(path_);
    if (Sh("truncate -s " + std::to_string(bytes) + " " + Quote(image_)) != 0) {
      why_ = "truncate failed";
    } else if (Sh("mkfs.ext4 -q -F -m 0 " + Quote(image_)) != 0) {
      why_ = "mkfs.ext4 -m 0 failed (is it installed?)";
    } else if (!Attach()) {
      why_ = "losetup --find failed (needs root and a free loop device)";
    } else if (Sh("mount " + Quote(device_) + " " + Quote(path_)) != 0) {
      why_ = "mount " + device_ + " failed (needs root)";
      Sh("losetup -d " + Quote(device_));
      device_.clear();
    } else {
      mounted_ = true;
    }
  }
  ~LoopMount() {
    // A process that used io_uring on the disk may have exited with its files still open for a
    // moment (the kernel tears its ring down asynchronously): retry before a lazy unmount.
    bool unmounted = !mounted_;
    for (int i = 0; i < 50 && !unmounted; ++i) {
      unmounted = Sh("umount " + Quote(path_)) == 0;
      if (!unmounted) ::usleep(100 * 1000);
    }
    if (!unmounted) Sh("umount -l " + Quote(path_));
    // Detached now, or (still busy after a lazy unmount) as soon as the kernel lets go of it.
    if (!device_.empty()) Sh("losetup -d " + Quote(device_));
  }
  LoopMount(const LoopMount&) = delete;
  LoopMount& operator=(const LoopMount&) = delete;

  bool ok() const { return mounted_; }
  const std::string& why() const { return why_; }
  const std::string& path() const { return path_; }

  uint64_t block_bytes() const {
    struct statvfs v;
    return ::statvfs(path_.c_str(), &v) == 0 && v.f_frsize > 0 ? v.f_frsize : 4096;
  }

  uint64_t free_bytes() const {
    struct statvfs v;
    return ::statvfs(path_.c_str(), &v) == 0 ? uint64_t(v.f_bavail) * v.f_frsize : 0;
  }

  // Takes free space (the file `name` on the mount) until at most `left` bytes are free:
  // fallocate for the bulk, then writes for what its metadata left. False when the disk
  // kept more than `left` free.
  bool fill_leaving(uint64_t left, const std::string& name = "filler") {
    const std::string filler = path_ + "/" + name;
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    const uint64_t slack = 256 << 10;  // for the file's own extent blocks
    if (free_bytes() > left + slack) {
      struct stat st;
      const off_t at = ::fstat(fd, &st) == 0 ? st.st_size : 0;
      (void)::posix_fallocate(fd, at, off_t(free_bytes() - left - slack));
    }
    // 4 KiB at a time, then a filesystem block at a time (a small ext4 has 1 KiB blocks, and a
    // 4 KiB write fails whole when fewer than 4 are left).
    char block[4096] = {};
    for (size_t chunk : {sizeof block, size_t(block_bytes())}) {
      while (free_bytes() > left && ::write(fd, block, std::min(chunk, sizeof block)) > 0) {
      }
    }
    ::fsync(fd);
    ::close(fd);
    return free_bytes() <= left;
  }
  // Removes what fill_leaving(…, name) took.
  void unfill(const std::string& name = "filler") {
    std::error_code ec;
    std::filesystem::remove(path_ + "/" + name, ec);
  }

 private:
  static std::string Quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  }
  static int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }
  bool Attach() {
    const std::string cmd = "losetup --find --show " + Quote(image_) + " 2>/dev/null";
    FILE* out = ::popen(cmd.c_str(), "r");
    if (out == nullptr) return false;
    char line[256] = {};
    const bool got = std::fgets(line, sizeof line, out) != nullptr;
    const int rc = ::pclose(out);
    if (!got || rc != 0) return false;
    device_ = line;
    while (!device_.empty() && (device_.back() == '\n' || device_.back() == ' '))
      device_.pop_back();
    return !device_.empty();
  }

  std::string image_, path_, device_, why_;
  bool mounted_ = false;
};

}  // namespace strata::test_support
