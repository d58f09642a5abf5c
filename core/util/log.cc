#include "core/util/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace strata {

std::shared_ptr<spdlog::logger> Logger(const std::string& module) {
  if (auto existing = spdlog::get(module)) return existing;
  try {
    auto logger = spdlog::stderr_color_mt(module);
    logger->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
    logger->set_level(spdlog::get_level());
    return logger;
  } catch (const spdlog::spdlog_ex&) {
    // Another thread registered it between get() and create.
    return spdlog::get(module);
  }
}

void SetLogLevel(const std::string& level) {
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace strata
