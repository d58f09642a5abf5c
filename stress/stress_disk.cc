#include "stress/stress_disk.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/util/sizes.h"

extern char** environ;

namespace strata::stress {
namespace {

constexpr const char* kFillerName = "stress-filler";

// Runs `argv` (argv[0] found on PATH) with stdout and stderr captured; its exit code in *code,
// its output in *output. Errors: it could not be started or waited for.
Status RunTool(const std::vector<std::string>& argv_s, int* code, std::string* output) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  std::vector<std::string> args = argv_s;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    return Status::FromErrno(rc, "cannot run " + argv_s[0]);
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) output->append(buf, size_t(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "waitpid " + argv_s[0]);
  }
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return Status::Ok();
}

// RunTool, with a non-zero exit as an error naming the command and its last words.
Result<std::string> Run(const std::vector<std::string>& argv) {
  int code = 0;
  std::string output;
  STRATA_RETURN_IF_ERROR(RunTool(argv, &code, &output));
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  if (code == 0) return output;
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  return Status::FailedPrecondition(command + " failed (exit " + std::to_string(code) + ")" +
                                    (output.empty() ? "" : ": " + output.substr(0, 200)));
}

uint64_t FreeBytesOf(const std::string& path) {
  struct statvfs v;
  return ::statvfs(path.c_str(), &v) == 0 ? uint64_t(v.f_bavail) * v.f_frsize : 0;
}

}  // namespace

Result<std::unique_ptr<StressDisk>> StressDisk::Mount(const std::string& dir, uint64_t bytes) {
  std::unique_ptr<StressDisk> disk(new StressDisk);
  disk->image_ = dir + "/disk.img";
  disk->path_ = dir + "/disk";
  std::error_code ec;
  std::filesystem::create_directories(disk->path_, ec);
  if (ec) return Status::IoError("cannot create " + disk->path_ + ": " + ec.message());
  STRATA_RETURN_IF_ERROR(Run({"truncate", "-s", std::to_string(bytes), disk->image_}).status());
  STRATA_RETURN_IF_ERROR(Run({"mkfs.ext4", "-q", "-F", "-m", "0", disk->image_}).status());
  STRATA_ASSIGN_OR_RETURN(disk->device_, Run({"losetup", "--find", "--show", disk->image_}));
  STRATA_RETURN_IF_ERROR(Run({"mount", disk->device_, disk->path_}).status());
  disk->mounted_ = true;
  return disk;
}

StressDisk::~StressDisk() {
  // A child that used io_uring on the disk may have exited with its files still open for a
  // moment (the kernel tears its ring down asynchronously): retry, then unmount lazily.
  bool unmounted = !mounted_;
  for (int i = 0; i < 50 && !unmounted; ++i) {
    unmounted = Run({"umount", path_}).ok();
    if (!unmounted) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!unmounted) Run({"umount", "-l", path_}).status().ignore_error();
  // Detached now, or (still busy after a lazy unmount) as soon as the kernel lets go of it.
  if (!device_.empty()) Run({"losetup", "-d", device_}).status().ignore_error();
}

Result<uint64_t> StressDisk::fill() {
  const std::string filler = path_ + "/" + kFillerName;
  const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "open " + filler);
  const uint64_t before = FreeBytesOf(path_);
  const uint64_t slack = 256 << 10;  // the filler's own extent blocks
  if (before > slack) (void)::posix_fallocate(fd, 0, off_t(before - slack));
  // What fallocate left (or a child freed meanwhile): 4 KiB at a time, then a filesystem block
  // at a time (a 4 KiB write fails whole when fewer blocks than that are left).
  struct statvfs v;
  const size_t fs_block = ::statvfs(path_.c_str(), &v) == 0 && v.f_frsize > 0 ? v.f_frsize : 4096;
  char block[4096] = {};
  for (const size_t chunk : {sizeof block, std::min(fs_block, sizeof block)}) {
    while (::write(fd, block, chunk) > 0) {
    }
  }
  ::fsync(fd);
  ::close(fd);
  return before - std::min(before, FreeBytesOf(path_));
}

Status StressDisk::unfill() {
  const std::string filler = path_ + "/" + kFillerName;
  if (::unlink(filler.c_str()) != 0 && errno != ENOENT) {
    return Status::FromErrno(errno, "remove " + filler);
  }
  return Status::Ok();
}

Status ProbeLoopMount(const std::string& scratch) {
  const std::string dir = scratch + "/loop-probe";
  Status s;
  {
    Result<std::unique_ptr<StressDisk>> disk = StressDisk::Mount(dir, 8 * kMiB);
    s = disk.status();
  }  // unmounted and detached here
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return s;
}

}  // namespace strata::stress
