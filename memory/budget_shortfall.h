// BudgetShortfall: the structured form of "this budget is too small", attached by memory/ to the
// Status (Status::detail) of every error that a larger budget would have avoided. memory/ states
// the numbers in words that name no command-line flag; only tools/ knows which flag sets which
// budget and words the advice (tools/budget_message.h). The scheduler's refusals before step 1
// (scheduler/memory_plan.h) are about its own flags and name them already; their numbers are
// public functions (MinimalDeviceBytes) rather than details, so no message is advised twice.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/status.h"
#include "memory/tier.h"

namespace strata::memory {

// Besides a larger budget, what else lowers the need.
enum class Relief : uint8_t {
  kNone = 0,
  kSmallerPages,  // the need is a number of pages: a smaller page size needs fewer bytes
};

// A Status detail (core/util/status.h): WithDetail(status, shortfall) attaches it,
// DetailOf<BudgetShortfall>(status) reads it.
struct BudgetShortfall {
  Tier tier = Tier::kHost;
  uint64_t need_bytes = 0;  // the smallest budget that would have done
  uint64_t have_bytes = 0;  // the budget given
  std::string what;         // what needs the bytes: "one page", "the minimal working set"
  std::string held_by;      // who holds the budget now (a stall), empty when nothing does
  Relief or_lower = Relief::kNone;
};

}  // namespace strata::memory
