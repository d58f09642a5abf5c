// Logging through spdlog, one named logger per module ("core", "storage", "memory", ...).
// Every logger writes to stderr so that stdout stays machine-readable (JSON from `bench`).
//   strata::Logger("storage")->info("io_uring unavailable ({}); using the pread path", why);
// Levels: info for what a user wants to see once, debug for per-step detail.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace strata {

// Returns the stderr logger named `module`, creating it on first use (thread-safe; spdlog's
// registry owns it).
std::shared_ptr<spdlog::logger> Logger(const std::string& module);

// Sets the level of every existing and future Strata logger: "debug", "info", "warn", "error", "off".
void SetLogLevel(const std::string& level);

}  // namespace strata
