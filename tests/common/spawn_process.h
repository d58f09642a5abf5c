// SpawnProcess: starts a program in the background with its stdout and stderr both going to one
// file, for tests that kill it or its children. Shared by every test folder.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

extern "C" char** environ;

namespace strata::test_support {

// argv[0] is the program's path (not searched on PATH). Returns the child's pid, -1 when it
// could not be started.
inline pid_t SpawnProcess(std::vector<std::string> argv_s, const std::string& out_path) {
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

}  // namespace strata::test_support
