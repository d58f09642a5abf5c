// Stall reports (internal to memory/): who holds what when a request waited too long, and the
// Timeout that carries it.
#pragma once

#include <string>

#include "core/util/status.h"
#include "memory/manager_state.h"

namespace strata::memory::internal {

// Every pinned or moving page (first 64) and the host pool's frames. Takes each page's mutex in
// turn: call it with no page mutex held.
std::string StallReport(ManagerState& m);

// Timeout for a request on `page` that waited stall_timeout_ms for `what`, with the report.
// `for_frame`: the wait was for a host frame, so the host budget is the limit (the Status then
// carries a BudgetShortfall); otherwise the holders of the page itself must let go.
Status StallStatus(ManagerState& m, PageId page, const std::string& what, bool for_frame);

}  // namespace strata::memory::internal
