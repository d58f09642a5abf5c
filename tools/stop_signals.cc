#include "tools/stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace strata::tools {
namespace {

std::atomic<int> g_stop{0};  // Note [Stop flag]
static_assert(std::atomic<int>::is_always_lock_free, "the stop flag must be signal-safe");

void OnStopSignal(int signo) {
  int none = 0;
  if (!g_stop.compare_exchange_strong(none, signo)) ::_exit(128 + signo);  // a second one
}

}  // namespace

const std::atomic<int>* InstallStopSignals() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // I/O in flight goes on; the trainer looks at the flag between steps
  for (int signo : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(signo, &sa, nullptr);
  return &g_stop;
}

void RequestStop(int reason) {
  int none = 0;
  g_stop.compare_exchange_strong(none, reason);
}

int StopSignalNumber() {
  const int v = g_stop.load();
  return v > 0 ? v : 0;
}

const char* StopSignalName(int signo) {
  switch (signo) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

}  // namespace strata::tools
