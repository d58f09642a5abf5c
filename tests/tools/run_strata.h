// Runs the built `strata` binary as a user would, capturing exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/scratch_dir.h"

namespace strata::testing {

using ::strata::test_support::ScratchDir;

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

// `args` are passed to strata (after the binary path), each quoted.
inline RunResult RunStrata(const std::vector<std::string>& args, const std::string& workdir) {
  std::string cmd = ShellQuote(STRATA_BINARY);
  for (const auto& a : args) cmd.append(" ").append(ShellQuote(a));
  const std::string out_path = workdir + "/stdout.txt", err_path = workdir + "/stderr.txt";
  cmd.append(" >").append(ShellQuote(out_path)).append(" 2>").append(ShellQuote(err_path));
  const int rc = std::system(cmd.c_str());
  RunResult r;
  if (rc != -1 && WIFEXITED(rc)) r.exit_code = WEXITSTATUS(rc);
  r.out = ReadWholeFile(out_path);
  r.err = ReadWholeFile(err_path);
  return r;
}

}  // namespace strata::testing
