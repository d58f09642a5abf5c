#include "tools/budget_message.h"

#include <algorithm>

#include "core/util/sizes.h"

namespace strata::tools {

const char* BudgetFlag(memory::Tier tier) {
  switch (tier) {
    case memory::Tier::kDevice:
      return "--gpu-mem";
    case memory::Tier::kHost:
      return "--host-mem";
    case memory::Tier::kNvme:
      return "--nvme-mem";
  }
  return "?";
}

std::string BudgetAdvice(const memory::BudgetShortfall& s) {
  // Plain bytes first: every size flag accepts them as they are.
  std::string advice = std::string("raise ") + BudgetFlag(s.tier);
  if (s.need_bytes > s.have_bytes) {
    advice += " to at least " + std::to_string(s.need_bytes) + " (" + FormatBytes(s.need_bytes) +
              ")";
  }
  if (s.or_lower == memory::Relief::kSmallerPages) advice += ", or lower --page-size";
  return advice;
}

Status WithBudgetAdvice(const Status& status) {
  const memory::BudgetShortfall* s = DetailOf<memory::BudgetShortfall>(status);
  if (s == nullptr) return status;
  std::string message = status.message();
  size_t line_end = std::min(message.find('\n'), message.size());
  if (line_end > 0 && message[line_end - 1] == '.') message.erase(--line_end, 1);
  message.insert(line_end, "; " + BudgetAdvice(*s));
  return status.with_message(std::move(message));
}

}  // namespace strata::tools
