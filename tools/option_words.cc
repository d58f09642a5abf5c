#include "tools/option_words.h"

#include "memory/budget_shortfall.h"

namespace strata::tools {

std::string FlagOf(Option option) {
  // Every flag is its option's key with dashes: the keys were named after the flags
  // (core/util/option.h), so the table is this one rule.
  std::string flag = "--" + std::string(OptionKey(option));
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

std::string InFlagTerms(const std::string& text) { return WordMentions(text, FlagOf); }

Status InFlagTerms(const Status& status) {
  if (status.ok()) return status;
  // A Status keeps its detail through with_context only: the details a lower floor attaches
  // are carried over by type.
  Status out(status.code(), InFlagTerms(status.message()));
  if (const OptionFault* f = OptionFaultOf(status)) return WithOptionFault(out, *f);
  if (const memory::BudgetShortfall* s = memory::ShortfallOf(status)) {
    return memory::WithShortfall(out, *s);
  }
  return out;
}

}  // namespace strata::tools
