// `strata bench parallel`: the child processes it launches, each with a deadline, so that a rank
// that hangs ends the benchmark with an error instead of stalling it (bench/bench_parallel.h).
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench/bench_parallel.h"

extern "C" char** environ;

namespace strata::bench::parallel_bench {
namespace {

using Clock = std::chrono::steady_clock;

// The last `lines` lines of `text` (at most 4 KiB of them).
std::string Tail(const std::string& text, int lines) {
  size_t start = text.size();
  int seen = 0;
  while (start > 0) {
    // A newline that ends the text does not start a line.
    if (text[start - 1] == '\n' && start != text.size() && ++seen == lines) break;
    --start;
  }
  std::string tail = text.substr(start);
  return tail.size() > 4096 ? tail.substr(tail.size() - 4096) : tail;
}

// Waits for `pid` until `deadline`; true when it ended (its wait status in `status`).
bool WaitUntil(pid_t pid, Clock::time_point deadline, int* status) {
  for (;;) {
    const pid_t got = ::waitpid(pid, status, WNOHANG);
    if (got == pid) return true;
    if (got < 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

Result<ChildResult> RunChild(const std::vector<std::string>& argv, const std::string& dir,
                             const std::string& tag, double timeout_s) {
  const std::string out_path = dir + "/" + tag + ".out", err_path = dir + "/" + tag + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, c_args[0], &fa, nullptr, c_args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Status::FromErrno(rc, "bench parallel: cannot start " + argv[0]);
  ChildResult r;
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  if (!WaitUntil(pid, std::chrono::time_point_cast<Clock::duration>(deadline), &status)) {
    // mpirun passes SIGTERM on to its ranks and ends them.
    r.timed_out = true;
    ::kill(pid, SIGTERM);
    if (!WaitUntil(pid, Clock::now() + std::chrono::seconds(5), &status)) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  if (!r.timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = ReadWholeFile(out_path);
  r.err = Tail(ReadWholeFile(err_path), 20);
  return r;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::string> FindMpirun(const std::string& flag_value) {
  if (!flag_value.empty()) {
    if (IsExecutableFile(flag_value)) return flag_value;
    return Status::InvalidArgument("--mpirun " + flag_value +
                                   ": not an executable file; pass the path of OpenMPI's mpirun");
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string candidate = (d.empty() ? std::string(".") : d) + "/mpirun";
    if (IsExecutableFile(candidate)) return candidate;
  }
  return Status::NotSupported(
      "bench parallel: mpirun is not on PATH; install OpenMPI (Debian: apt-get install "
      "openmpi-bin libopenmpi-dev, then rebuild) or pass --mpirun PATH");
}

Result<std::string> SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n < 0) return Status::FromErrno(errno, "bench parallel: readlink /proc/self/exe");
  return std::string(buf, size_t(n));
}

std::vector<std::string> MpirunPrefix(const std::string& mpirun, double timeout_s, int ranks) {
  // mpirun's --timeout takes whole seconds.
  const long seconds = std::max(1L, long(timeout_s + 0.5));
  return {mpirun, "--allow-run-as-root", "--oversubscribe", "--timeout", std::to_string(seconds),
          "-np",  std::to_string(ranks)};
}

std::string DisplayCommand(const std::vector<std::string>& argv, const std::string& self,
                           const std::string& mpirun, const std::string& dir) {
  std::string text;
  for (const std::string& a : argv) {
    std::string shown = a;
    if (a == self) shown = "strata";
    if (a == mpirun) shown = "mpirun";
    if (a.rfind(dir + "/", 0) == 0) shown = a.substr(dir.size() + 1);
    text += (text.empty() ? "" : " ") + shown;
  }
  return text;
}

Status ChildFailed(const std::string& what, const ChildResult& r, double timeout_s) {
  const std::string err = r.err.empty() ? "(nothing on stderr)" : r.err;
  if (r.timed_out) {
    return Status::Timeout("bench parallel: " + what + " did not finish within " +
                           std::to_string(long(timeout_s)) +
                           " s and was stopped; raise --timeout, or lower --steps or the model "
                           "if this machine is slow. Its stderr ended with:\n" +
                           err);
  }
  return Status::Aborted("bench parallel: " + what + " failed (exit code " +
                         std::to_string(r.exit_code) + "; each launch may take --timeout " +
                         std::to_string(long(timeout_s)) +
                         " s); run it by hand to see why. Its stderr ended with:\n" + err);
}

Status RunFresh(const Flags& f, const Launch& run, const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove(run.out_file, ec);
  STRATA_ASSIGN_OR_RETURN(const ChildResult child,
                          RunChild(run.argv, dir, run.tag, f.timeout_s + 30));
  if (child.exit_code != 0) return ChildFailed(run.display, child, f.timeout_s);
  return Status::Ok();
}

}  // namespace strata::bench::parallel_bench
