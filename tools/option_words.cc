#include "tools/option_words.h"

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
  // The words change; the detail a lower floor attached (an OptionFault, a BudgetShortfall)
  // stays for the code that acts on it.
  return status.with_message(InFlagTerms(status.message()));
}

}  // namespace strata::tools
