// Names the calling thread (at most 15 characters are kept, the kernel's limit), so that top -H,
// perf and /proc/<pid>/task/*/comm tell Strata's threads apart: "sim:compute", "io-complete",
// "mm-worker", ... Best effort: a failure changes nothing else.
#pragma once

#include <pthread.h>

#include <string>

namespace strata {

inline void SetThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace strata
