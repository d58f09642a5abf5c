// One child `strata` process of `strata stress`: spawned from this very binary, its stdout and
// stderr in one file, optionally stopped by a signal once its --log-json shows a given number of
// steps, and killed (a hang) when it outlives its time limit.
//
// Threads: one thread; the calls block until the child has ended.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "stress/stress_judge.h"

namespace strata::stress {

// When and how to disturb a child: once `log_path` holds `after_steps` complete lines, wait
// `delay_ms`, then send `signal`, or, when `action` is set, call it instead (on the waiting
// thread, while the child runs; e.g. fill its disk). Neither set: never.
struct StopPlan {
  int signal = 0;
  std::function<void()> action;
  long after_steps = 0;
  int delay_ms = 0;
  std::string log_path;
};

struct ChildRun {
  ChildExit how;
  bool signal_sent = false;  // the StopPlan's signal was sent or its action ran (the child may
                             // have ended first)
  double wall_s = 0;
  std::string output;        // what it wrote on stdout and stderr
};

// The running binary (/proc/self/exe), for children.
std::string SelfBinary();

// Runs `binary args...` with stdout and stderr to `output_path` and waits for it (polling every
// 2 ms). After `timeout_s` it is SIGKILLed and reported as timed out. Errors: spawning or waiting
// failed (not the child's own failure, which is in ChildRun).
// The child's environment is this process's with STRATA_INJECT_FAULTS set to `fault_spec`
// (stress/fault_spec.h), or without it when `fault_spec` is empty: only the attempts that draw a
// disk fault inject one, even when `strata stress` itself was started with the variable set.
Result<ChildRun> RunChild(const std::string& binary, const std::vector<std::string>& args,
                          const std::string& fault_spec, const std::string& output_path,
                          const StopPlan& stop, double timeout_s);

// A command line as a shell would take it, for failure reports; with STRATA_INJECT_FAULTS=SPEC in
// front when `fault_spec` is not empty.
std::string CommandLine(const std::string& binary, const std::vector<std::string>& args,
                        const std::string& fault_spec = "");

// The whole file, or "" when it cannot be read.
std::string ReadFileText(const std::string& path);

}  // namespace strata::stress
