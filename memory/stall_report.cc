#include "memory/stall_report.h"

#include <sstream>

#include "memory/budget_shortfall.h"

namespace strata::memory::internal {

std::string StallReport(ManagerState& m) {
  std::ostringstream os;
  const TierStats host = m.pool->stats();
  os << "  host: " << host.current_bytes / m.page_bytes << "/" << m.pool->capacity_frames()
     << " frames in use, " << host.resident_pages << " resident pages\n";
  int listed = 0;
  for (PageId p = 0; p < m.pages.size() && listed < 64; ++p) {
    PageEntry& e = m.pages[p];
    std::lock_guard lock(e.mu);
    if (e.holders.empty() && !e.moving()) continue;
    ++listed;
    os << "  page " << p;
    if (e.state == PageState::kLoading) os << " (being loaded)";
    if (e.state == PageState::kStaging) os << " (being written to NVMe)";
    os << ":";
    for (const Holder& h : e.holders) {
      os << " [" << (h.access == Access::kRead ? "read" : "write") << " on host by " << h.name
         << "]";
    }
    os << "\n";
  }
  if (listed == 0) os << "  no page is pinned or moving\n";
  return os.str();
}

Status StallStatus(ManagerState& m, PageId page, const std::string& what, bool for_frame) {
  const std::string report = StallReport(m);
  const std::string hint = for_frame ? "raise the host budget or have holders release pages sooner"
                                     : "the holders below must release it";
  // The first line is a whole sentence: tools/ appends the flag to raise to it.
  const std::string who =
      page == ~PageId{0} ? "a borrowed frame" : "page " + std::to_string(page);
  const std::string msg = who + ": waited " +
                          std::to_string(m.opt.stall_timeout_ms) + " ms for " + what +
                          " without progress; " + hint + "\nWho holds what:\n" + report;
  m.log->warn("{}", msg);
  Status st = Status::Timeout(msg);
  if (!for_frame) return st;
  const uint64_t have = m.pool->capacity_frames() * m.page_bytes;
  return WithDetail(st, BudgetShortfall{.tier = Tier::kHost,
                                        .need_bytes = have + m.page_bytes,
                                        .have_bytes = have,
                                        .what = "a free page frame",
                                        .held_by = report,
                                        .or_lower = Relief::kNone});
}

}  // namespace strata::memory::internal
