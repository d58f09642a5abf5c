// Runs the built `strata` binary as a user would, capturing exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/common/scratch_dir.h"

extern "C" char** environ;

namespace strata::testing {

using ::strata::test_support::ScratchDir;

// The mpirun that CMake found (tests/tools/tests.cmake defines STRATA_MPIEXEC); multi-rank tests
// skip when there is none.
#ifdef STRATA_MPIEXEC
inline constexpr bool kHaveMpirun = true;
inline constexpr const char* kMpirun = STRATA_MPIEXEC;
#else
inline constexpr bool kHaveMpirun = false;
inline constexpr const char* kMpirun = "";
#endif

struct RunResult {
  int exit_code = -1;      // -1 when the process died from a signal
  std::string out;
  std::string err;
};

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string ShellQuote(const std::string& s) {
  std::string q(1, '\'');
  for (char c : s) {
    if (c == '\'') {
      q.append("'\\''");
    } else {
      q.push_back(c);
    }
  }
  q.push_back('\'');
  return q;
}

// `args` are passed to strata (after the binary path), each quoted. A non-empty `shell_prefix`
// runs before it in the same shell, e.g. "ulimit -v 4194304;" to cap its address space.
inline RunResult RunStrata(const std::vector<std::string>& args, const std::string& workdir,
                           const std::string& shell_prefix = "") {
  std::string cmd = shell_prefix + " exec " + ShellQuote(STRATA_BINARY);
  for (const auto& a : args) cmd.append(" ").append(ShellQuote(a));
  const std::string out_path = workdir + "/stdout.txt", err_path = workdir + "/stderr.txt";
  cmd.append(" >").append(ShellQuote(out_path)).append(" 2>").append(ShellQuote(err_path));
  const int rc = std::system(cmd.c_str());
  RunResult r;
  if (rc != -1 && WIFEXITED(rc)) r.exit_code = WEXITSTATUS(rc);
  r.out = ReadWholeFile(out_path);
  r.err = ReadWholeFile(err_path);
  if (rc != -1 && WIFSIGNALED(rc)) {
    r.err += "\n(killed by signal " + std::to_string(WTERMSIG(rc)) + ")";
  }
  return r;
}

// Starts strata with `args` in the background (stdout and stderr to files in `workdir`), for
// tests that signal it; WaitStrata collects it.
inline pid_t SpawnStrata(const std::vector<std::string>& args, const std::string& workdir) {
  std::vector<std::string> argv_s = {STRATA_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = workdir + "/stdout.txt", err_path = workdir + "/stderr.txt";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Waits for a SpawnStrata child: exit code (-1 when a signal killed it) and its output.
inline RunResult WaitStrata(pid_t pid, const std::string& workdir) {
  int status = 0;
  RunResult r;
  if (::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = ReadWholeFile(workdir + "/stdout.txt");
  r.err = ReadWholeFile(workdir + "/stderr.txt");
  return r;
}

// Polls until `path` holds at least `lines` newline-ended lines; false after `timeout`.
inline bool WaitForLines(const std::string& path, size_t lines, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = ReadWholeFile(path);
    if (size_t(std::count(text.begin(), text.end(), '\n')) >= lines) return true;
    ::usleep(5000);
  }
  return false;
}

// step -> loss text of a --log-json (a resumed run appends to it): the exact bits.
inline std::map<long, std::string> LossesByStep(const std::string& path) {
  std::map<long, std::string> out;
  std::istringstream lines(ReadWholeFile(path));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    out[j.at("step").get<long>()] = j.at("loss").dump();
  }
  return out;
}

// How often `needle` occurs in `text`.
inline size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// Runs `ranks` copies of `strata args` under mpirun (each group of args one MPMD program when
// `programs` has several).
inline RunResult RunMpi(const std::vector<std::vector<std::string>>& programs, int ranks_each,
                        const std::string& dir) {
  // Each launch keeps its session directory under `dir`: two mpiruns at once (ctest -j) sharing
  // /tmp/ompi.<host>.<uid> raced there, one removing it while the other created its own in it
  // ("orte_session_dir failed", seen 2026-11-26).
  const std::string session = dir + "/ompi-session";
  std::filesystem::create_directories(session);
  std::string cmd = ShellQuote(kMpirun) + " --allow-run-as-root --oversubscribe --timeout 100" +
                    " --mca orte_tmpdir_base " + ShellQuote(session);
  for (size_t p = 0; p < programs.size(); ++p) {
    if (p > 0) cmd += " :";
    cmd += " -np " + std::to_string(ranks_each) + " " + ShellQuote(STRATA_BINARY);
    for (const auto& a : programs[p]) cmd += " " + ShellQuote(a);
  }
  cmd += " >" + ShellQuote(dir + "/stdout.txt") + " 2>" + ShellQuote(dir + "/stderr.txt");
  const int rc = std::system(cmd.c_str());
  RunResult r;
  if (rc != -1 && WIFEXITED(rc)) r.exit_code = WEXITSTATUS(rc);
  r.out = ReadWholeFile(dir + "/stdout.txt");
  r.err = ReadWholeFile(dir + "/stderr.txt");
  return r;
}

// A refusal as users see it: the first line of stderr starts with "strata: " and holds every
// fragment; no crash, no internal check.
inline void ExpectOneClearLine(const RunResult& r, const std::vector<std::string>& fragments) {
  ASSERT_NE(r.exit_code, -1) << "crashed: " << r.err;
  EXPECT_EQ(r.err.find("STRATA_CHECK"), std::string::npos) << r.err;
  const std::string first = r.err.substr(0, r.err.find('\n'));
  EXPECT_EQ(first.rfind("strata: ", 0), 0u) << r.err;
  for (const auto& frag : fragments) {
    EXPECT_NE(first.find(frag), std::string::npos) << "missing '" << frag << "' in: " << first;
  }
}

}  // namespace strata::testing
