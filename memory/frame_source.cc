#include "memory/frame_source.h"

#include <vector>

#include "memory/stall_report.h"

namespace strata::memory::internal {

Result<Eviction> TryEvict(ManagerState& m, PageId v, bool may_stage, bool peek_clean) {
  Eviction out;
  PageEntry& e = m.pages[v];
  std::unique_lock lock(e.mu);
  if (e.pinned() || (e.state != PageState::kClean && e.state != PageState::kDirty)) return out;
  if (e.state == PageState::kDirty) {
    if (!m.write_back.enabled() || !may_stage || !e.can_stage()) return out;
    STRATA_RETURN_IF_ERROR(m.write_back.stage(v, lock));
    Counters::bump(m.counters.write_backs);
    out.staged = true;
    return out;
  }
  if (peek_clean) {
    out.clean = true;
    return out;
  }
  out.frame = e.drop_clean();
  m.pool->remove_resident(v);
  Counters::bump(m.counters.evictions);
  return out;
}

namespace {

// One pass over the victims in order. Returns a frame, or nullptr with *commit_now set when a
// commit would free one (Note [Grouped write-back]).
Result<void*> EvictOnePass(ManagerState& m, uint64_t not_needed_before, bool* commit_now) {
  Ranking r =
      RankVictims(m.pool->resident_pages(), m.pages, m.opt.policy, m.cursors, not_needed_before);
  const bool nvme = m.write_back.enabled();
  const uint64_t stage_limit = !nvme ? 0 : r.planned ? 1 : m.group_pages;
  uint64_t staged_here = 0;
  for (size_t i = 0; i < r.order.size(); ++i) {
    // Demoted copies lead the recency order; a run that starts with them ends with them, so
    // pages still to be used soon are not written early behind them.
    if (staged_here > 0 && r.demoted > 0 && i >= r.demoted) break;
    // In recency order a clean copy after the run ends it: commit, take the run's first.
    const bool end_of_run = !r.planned && staged_here > 0;
    Result<Eviction> e = TryEvict(m, r.order[i], staged_here < stage_limit, end_of_run);
    if (!e.ok()) {
      // Typically no free NVMe slot for one more version: a commit frees the old versions'.
      if (!nvme || m.write_back.staged() == 0) return e.status();
      break;
    }
    if (e->frame != nullptr) return e->frame;
    if (e->clean) break;
    if (e->staged) {
      ++staged_here;
      if (m.write_back.staged() >= (r.planned ? m.behind_pages : m.group_pages)) break;
    }
  }
  // Whatever stopped the pass, or nothing droppable left but staged copies (the run,
  // write-behind victims, pages that flush() staged): the commit makes them clean.
  *commit_now = nvme && (staged_here > 0 || m.write_back.staged() > 0);
  return nullptr;
}

}  // namespace

Result<void*> TakeFrame(ManagerState& m, PageId for_page, bool may_wait,
                        uint64_t not_needed_before) {
  StallClock clock(m.opt.stall_timeout_ms);
  bool counted_wait = false;
  for (;;) {
    const uint64_t seen = m.pool->progress();
    if (void* f = m.pool->take()) return f;
    bool commit_now = false;
    STRATA_ASSIGN_OR_RETURN(void* f,
                            EvictOnePass(m, may_wait ? 0 : not_needed_before, &commit_now));
    if (f != nullptr) return f;
    if (commit_now) {
      STRATA_RETURN_IF_ERROR(m.write_back.commit(/*forced=*/true));
      continue;
    }
    if (!may_wait) return static_cast<void*>(nullptr);
    if (!counted_wait) {
      Counters::bump(m.counters.admission_waits);
      counted_wait = true;
    }
    m.pool->wait_for_progress(seen, kWaitSlice);
    if (clock.expired()) return StallStatus(m, for_page, "a free page frame", /*for_frame=*/true);
  }
}

}  // namespace strata::memory::internal
