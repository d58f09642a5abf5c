// The CLI's words for the options that the floors below name (Note [Options in messages] in
// core/util/option.h): each option is the flag that sets it, `--nvme-mem` for nvme_mem. main()
// words every command's error with it, and so does each place that prints a lower floor's text
// (a rank's error, a stress config's skip reason); main() also words log lines with it.
#pragma once

#include <string>

#include "core/util/option.h"
#include "core/util/status.h"

namespace strata::tools {

// The flag that sets `option`: "--nvme-mem".
std::string FlagOf(Option option);

// `text` with every option mention worded as its flag.
std::string InFlagTerms(const std::string& text);

// `status` with its message in flag terms; code and detail kept.
Status InFlagTerms(const Status& status);

}  // namespace strata::tools
