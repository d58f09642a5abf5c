#include "core/util/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <string_view>

#include "core/util/log_words.h"

namespace strata {
namespace {

// The process's words for options in log lines. Global because log lines are the process's
// (spdlog's registry, which holds the loggers, is process-wide too); set once by the edge.
std::atomic<OptionWords> g_log_option_words{nullptr};

std::string KeyWords(Option option) { return std::string(OptionKey(option)); }

// spdlog's pattern formatter, after the payload's option mentions are worded.
class MentionFormatter final : public spdlog::formatter {
 public:
  MentionFormatter() : inner_("[%H:%M:%S.%e] [%n] [%^%l%$] %v") {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    if (payload.find('{') == std::string_view::npos) return inner_.format(msg, dest);
    const std::string worded = InLogTerms(payload);
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(worded.data(), worded.size());
    inner_.format(copy, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<MentionFormatter>();
  }

 private:
  spdlog::pattern_formatter inner_;
};

}  // namespace

std::shared_ptr<spdlog::logger> Logger(const std::string& module) {
  if (auto existing = spdlog::get(module)) return existing;
  try {
    auto logger = spdlog::stderr_color_mt(module);
    logger->set_formatter(std::make_unique<MentionFormatter>());
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

void SetLogOptionWords(OptionWords words) {
  g_log_option_words.store(words, std::memory_order_release);
}

std::string InLogTerms(std::string_view text) {
  const OptionWords words = g_log_option_words.load(std::memory_order_acquire);
  return WordMentions(text, words == nullptr ? KeyWords : words);
}

}  // namespace strata
