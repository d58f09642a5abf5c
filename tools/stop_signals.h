// SIGTERM, SIGINT and SIGHUP stop `strata train` cleanly: the first one lets the step in
// progress finish, then the trainer writes a checkpoint when checkpoints are on and returns
// (Note [Stopping after a step] in scheduler/train_options.h); the command prints one line and exits
// 128 + the signal. A second one (any of the three) exits at once with 128 + its number: the
// user insisted, and a checkpoint in progress is crash-consistent anyway.
//
// Note [Stop flag]
// The one piece of global mutable state in tools/: a lock-free std::atomic<int> holding the
// first stop signal's number (0: none). A signal handler can reach nothing else, and a lock-free
// atomic is async-signal-safe where a mutex or a heap object is not. The handler does nothing
// but a compare-exchange and, for a second signal, _exit. The command reads the flag after Run;
// the trainer reads it after each step through the borrowed TrainOptions::stop_signal.
//
// Threads: install from the main thread before any worker starts (workers inherit no mask
// change: the handlers run on whichever thread the kernel picks, which is fine for them).
#pragma once

#include <atomic>

namespace strata::tools {

// Installs the handlers (idempotent) and returns the stop flag (Note [Stop flag]).
const std::atomic<int>* InstallStopSignals();

// Asks the trainer to stop after the step in progress as if a signal had come, for a failure
// the command finds in its own callback (a --log-json write): `reason` is stored unless a signal
// came first. Negative reasons are not signals: StopSignalNumber() returns 0 for them.
void RequestStop(int reason);

// The first stop signal's number, 0 when none came (or the stop was a RequestStop).
int StopSignalNumber();

// "SIGTERM", "SIGINT", "SIGHUP", or "signal N".
const char* StopSignalName(int signo);

}  // namespace strata::tools
