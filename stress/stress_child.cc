#include "stress/stress_child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include "stress/fault_spec.h"

extern char** environ;

namespace strata::stress {
namespace {

using Clock = std::chrono::steady_clock;

// This process's environment, STRATA_INJECT_FAULTS replaced by `fault_spec` (none when empty).
std::vector<std::string> ChildEnvironment(const std::string& fault_spec) {
  const std::string name = std::string(kInjectFaultsVariable) + "=";
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind(name, 0) != 0) env.emplace_back(*e);
  }
  if (!fault_spec.empty()) env.push_back(name + fault_spec);
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> ptrs;
  for (std::string& s : strings) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
  return ptrs;
}

Result<pid_t> Spawn(const std::string& binary, const std::vector<std::string>& args,
                    const std::string& fault_spec, const std::string& output_path) {
  std::vector<std::string> argv_s = {binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv = Pointers(argv_s);
  std::vector<std::string> env_s = ChildEnvironment(fault_spec);
  std::vector<char*> env = Pointers(env_s);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, binary.c_str(), &fa, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Status::FromErrno(rc, "posix_spawn " + binary);
  return pid;
}

long CompleteLines(const std::string& path) {
  const std::string text = ReadFileText(path);
  return long(std::count(text.begin(), text.end(), '\n'));
}

ChildExit ExitOf(int status) {
  ChildExit e;
  e.exited = WIFEXITED(status);
  if (e.exited) e.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
}

// Polls until the child ends; sends the stop signal when its moment comes, SIGKILL at timeout.
Result<ChildRun> Supervise(pid_t pid, const StopPlan& stop, double timeout_s) {
  const auto start = Clock::now();
  std::optional<Clock::time_point> stop_at;
  ChildRun run;
  bool timed_out = false;
  for (;;) {
    int status = 0;
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got < 0 && errno != EINTR) return Status::FromErrno(errno, "waitpid");
    if (got == pid) {
      run.how = ExitOf(status);
      run.how.timed_out = timed_out;
      break;
    }
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - start).count() > timeout_s && !timed_out) {
      ::kill(pid, SIGKILL);
      timed_out = true;
    }
    if ((stop.signal != 0 || stop.action) && !run.signal_sent) {
      if (!stop_at && CompleteLines(stop.log_path) >= stop.after_steps) {
        stop_at = now + std::chrono::milliseconds(stop.delay_ms);
      }
      if (stop_at && now >= *stop_at) {
        if (stop.action) {
          stop.action();
        } else {
          ::kill(pid, stop.signal);
        }
        run.signal_sent = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  run.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

}  // namespace

std::string SelfBinary() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buf, size_t(n));
}

Result<ChildRun> RunChild(const std::string& binary, const std::vector<std::string>& args,
                          const std::string& fault_spec, const std::string& output_path,
                          const StopPlan& stop, double timeout_s) {
  STRATA_ASSIGN_OR_RETURN(const pid_t pid, Spawn(binary, args, fault_spec, output_path));
  STRATA_ASSIGN_OR_RETURN(ChildRun run, Supervise(pid, stop, timeout_s));
  run.output = ReadFileText(output_path);
  return run;
}

std::string CommandLine(const std::string& binary, const std::vector<std::string>& args,
                        const std::string& fault_spec) {
  std::string line = binary;
  if (!fault_spec.empty()) {
    line = std::string(kInjectFaultsVariable) + "=" + fault_spec + " " + line;
  }
  for (const std::string& a : args) {
    const bool plain = !a.empty() && a.find_first_of(" '\"$\\*?;&|<>()") == std::string::npos;
    line += ' ';
    line += plain ? a : "'" + a + "'";
  }
  return line;
}

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace strata::stress
