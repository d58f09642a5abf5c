#include "core/util/option.h"

#include <algorithm>
#include <iterator>

namespace strata {
namespace {

constexpr std::string_view kKeys[] = {
#define STRATA_OPTION_KEY_(name, key) key,
    STRATA_OPTIONS(STRATA_OPTION_KEY_)
#undef STRATA_OPTION_KEY_
};

bool IsKeyChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

}  // namespace

std::string_view OptionKey(Option option) { return kKeys[static_cast<size_t>(option)]; }

std::optional<Option> OptionOfKey(std::string_view key) {
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    if (kKeys[i] == key) return static_cast<Option>(i);
  }
  return std::nullopt;
}

std::string Mention(Option option) { return "{" + std::string(OptionKey(option)) + "}"; }

std::string WordMentions(std::string_view message, OptionWords words) {
  std::string out;
  out.reserve(message.size());
  size_t at = 0;
  while (at < message.size()) {
    const size_t open = message.find('{', at);
    if (open == std::string_view::npos) break;
    size_t end = open + 1;
    while (end < message.size() && IsKeyChar(message[end])) ++end;
    const std::optional<Option> option = end < message.size() && message[end] == '}'
                                             ? OptionOfKey(message.substr(open + 1, end - open - 1))
                                             : std::nullopt;
    out.append(message.substr(at, open - at));
    if (option) {
      out += words(*option);
      at = end + 1;
    } else {
      out += '{';
      at = open + 1;
    }
  }
  out.append(message.substr(std::min(at, message.size())));
  return out;
}

Status ShortOfBytes(Option option, const Status& status, uint64_t got_bytes, uint64_t need_bytes) {
  return AtFault(option, status,
                 {{"got", FaultNumber(got_bytes)}, {"need_bytes", FaultNumber(need_bytes)}});
}

Status NotOneOf(Option option, std::string_view choices, const std::string& got) {
  return AtFault(option, Status::InvalidArgument(Mention(option) + " must be " +
                                                 std::string(choices) + ", got '" + got + "'"));
}

std::optional<int64_t> OptionFault::number(std::string_view name) const {
  for (const auto& [n, v] : numbers) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace strata
