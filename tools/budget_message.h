// Budget advice: the words that turn a BudgetShortfall (memory/budget_shortfall.h) into what a
// user can do — which flag sets the budget that was short, how far to raise it, and what else
// to lower. memory/ names no flag (it is not a CLI library); this file is the one place that
// maps a tier to its flag. main() applies it to every command's error before printing it.
#pragma once

#include <string>

#include "core/util/status.h"
#include "memory/budget_shortfall.h"
#include "memory/tier.h"

namespace strata::tools {

// The flag that sets `tier`'s budget: --gpu-mem, --host-mem or --nvme-mem.
const char* BudgetFlag(memory::Tier tier);

// "raise --host-mem to at least 65536 (64.00 KiB), or lower --page-size".
std::string BudgetAdvice(const memory::BudgetShortfall& shortfall);

// `status` with BudgetAdvice for the shortfall it carries appended to its first line (the line
// a user reads; a stall report's list of holders follows it); `status` unchanged when it
// carries none. Code, detail and the rest of the message are kept.
Status WithBudgetAdvice(const Status& status);

}  // namespace strata::tools
