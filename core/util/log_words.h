// The words of option mentions in log lines (Note [Options in messages] in core/util/option.h).
#pragma once

#include <string>
#include <string_view>

#include "core/util/option.h"

namespace strata {

// Words the option mentions in every Strata log line (core/util/log.h) with `words`; nullptr
// (the default) words each as its key ("nvme_dir"). The process's edge sets it once, before the
// first run: the CLI's main() to flags. A log line reaches stderr without passing an edge, so
// its wording is the process's, not a call's.
void SetLogOptionWords(OptionWords words);

// `text` worded as log lines are: for the harness rooms (bench/, stress/), which print a lower
// floor's message themselves inside the CLI's process.
std::string InLogTerms(std::string_view text);

}  // namespace strata
