// The MemoryManager's moves (memory/memory_manager.h): loading a page into the pool on a miss,
// staging dirty pages (flush), dropping them (discard, evict_all) and snapshots. Each follows
// the transitions of Note [Page states] (memory/page_table.h) and Note [Locking]
// (memory_manager.cc): the page's mutex is released across every copy, I/O, commit and wait.
#include <algorithm>
#include <cstring>

#include "memory/frame_source.h"
#include "memory/manager_state.h"
#include "memory/memory_manager.h"
#include "memory/stall_report.h"

namespace strata::memory {

using internal::Counters;
using internal::ManagerState;
using internal::PageEntry;
using internal::PageState;
using internal::StallClock;

namespace {

// Waits on the page's condition variable until `ready()` holds; Timeout with the stall report
// after stall_timeout_ms.
template <typename Ready>
Status WaitForPage(ManagerState& m, PageId p, std::unique_lock<std::mutex>& lock,
                   const std::string& what, Ready ready) {
  PageEntry& e = m.pages[p];
  StallClock clock(m.opt.stall_timeout_ms);
  while (!ready()) {
    e.cv.wait_for(lock, internal::kWaitSlice);
    if (!ready() && clock.expired()) {
      lock.unlock();
      Status st = internal::StallStatus(m, p, what, /*for_frame=*/false);
      lock.lock();
      return st;
    }
  }
  return Status::Ok();
}

// Fills a fresh frame with the page's contents: its NVMe version or zeros.
Status Fill(ManagerState& m, PageId p, bool from_nvme, void* frame) {
  if (!from_nvme) {
    std::memset(frame, 0, m.page_bytes);
    return Status::Ok();
  }
  Status st = m.opt.nvme->read(p, frame).get();
  if (!st.ok()) return st.with_context("reading page " + std::to_string(p) + " from NVMe");
  Counters::bump(m.counters.nvme_read_bytes, m.page_bytes);
  return st;
}

}  // namespace

// The miss path (and prefetch when !pin, which never waits and returns nullptr). The frame is
// taken while the page is kLoading, so a second request for it waits and shares the load, and
// the request holds nothing an eviction needs (Note [No hold and wait]).
Result<void*> MemoryManager::load_and_pin(PageId p, Access a, const std::string& holder, bool pin) {
  ManagerState& m = *m_;
  PageEntry& e = m.pages[p];
  std::unique_lock lock(e.mu);
  for (;;) {
    if (!pin && (e.resident() || e.moving())) return static_cast<void*>(nullptr);
    if (pin && e.can_pin(a)) {
      Counters::bump(m.counters.hits);
      e.pin(a, holder, m.counters.next_tick());
      return e.frame;
    }
    const bool write_to_staged = a != Access::kRead && e.state == PageState::kStaged;
    if (write_to_staged && !e.pinned()) {  // its buffer must not change before the commit
      lock.unlock();
      STRATA_RETURN_IF_ERROR(m.write_back.commit(/*forced=*/true));
      lock.lock();
      continue;
    }
    if (!e.resident() && !e.moving()) break;
    STRATA_RETURN_IF_ERROR(WaitForPage(
        m, p, lock, std::string(a == Access::kRead ? "read" : "write") + " access to the page",
        [&] { return !e.moving() && (!e.resident() || e.can_pin(a) || !e.pinned()); }));
  }
  const bool from_nvme = e.begin_load();
  lock.unlock();
  uint64_t not_before = 0;
  auto plan = m.cursors.plan();
  if (!pin && m.opt.policy == EvictionPolicy::kBelady && plan && plan->size() > 0) {
    not_before = m.cursors.next_use(p);
  }
  Result<void*> frame = internal::TakeFrame(m, p, /*may_wait=*/pin, not_before);
  Status st = frame.status();
  if (st.ok() && *frame != nullptr && a != Access::kOverwrite) st = Fill(m, p, from_nvme, *frame);
  if (!st.ok() && frame.ok()) m.pool->put(*frame);
  lock.lock();
  if (!st.ok() || *frame == nullptr) {
    e.abort_load();
    e.cv.notify_all();
    lock.unlock();
    m.pool->wake();
    if (!st.ok()) return st;
    return static_cast<void*>(nullptr);  // a prefetch found no room
  }
  e.finish_load(*frame);
  m.pool->add_resident(p);
  e.last_use.store(m.counters.next_tick(), std::memory_order_relaxed);
  e.cv.notify_all();
  if (!pin) return static_cast<void*>(nullptr);
  Counters::bump(m.counters.misses);
  e.pin(a, holder, m.counters.next_tick());
  return e.frame;
}

Status MemoryManager::flush(std::span<const PageId> pages) {
  ManagerState& m = *m_;
  if (!m.write_back.enabled()) return Status::FailedPrecondition("flush: no NVMe tier");
  for (PageId p : pages) {
    STRATA_RETURN_IF_ERROR(check_page(p, "flush"));
    PageEntry& e = m.pages[p];
    std::unique_lock lock(e.mu);
    for (;;) {
      STRATA_RETURN_IF_ERROR(WaitForPage(m, p, lock, "the page to flush it",
                                         [&] { return !e.moving() && !e.writer; }));
      // Discarded while staged and written again since (Note [Page states]): the new contents
      // can only be staged once the dead version is committed out of the way.
      if (e.state != PageState::kDirty || e.can_stage()) break;
      lock.unlock();
      STRATA_RETURN_IF_ERROR(m.write_back.commit(/*forced=*/true));
      lock.lock();
    }
    if (e.state != PageState::kDirty) continue;
    Status st = m.write_back.stage(p, lock);
    lock.unlock();
    m.pool->wake();
    STRATA_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

Status MemoryManager::flush_all() {
  std::vector<PageId> all(m_->pages.size());
  for (PageId p = 0; p < all.size(); ++p) all[p] = p;
  return flush(all);
}

Status MemoryManager::discard(PageId page) {
  STRATA_RETURN_IF_ERROR(check_page(page, "discard"));
  ManagerState& m = *m_;
  PageEntry& e = m.pages[page];
  std::unique_lock lock(e.mu);
  // A move in flight (a prefetch, a write-back) ends by itself; pins end when their holders
  // release them. Waiting rather than failing lets a caller discard right after its own
  // release, whatever prefetches are doing to the page.
  STRATA_RETURN_IF_ERROR(WaitForPage(m, page, lock, "the page to discard it",
                                     [&] { return !e.moving() && !e.pinned(); }));
  const bool was_resident = e.resident();
  void* give_back = e.discard();
  if (was_resident) m.pool->remove_resident(page);
  e.cv.notify_all();
  lock.unlock();
  if (give_back != nullptr) m.pool->put(give_back);
  Counters::bump(m.counters.discards);
  m.pool->wake();
  return Status::Ok();
}

Status MemoryManager::evict_all() {
  ManagerState& m = *m_;
  if (m.write_back.enabled()) {
    STRATA_RETURN_IF_ERROR(flush_all());
    STRATA_RETURN_IF_ERROR(commit_nvme());
  }
  const std::vector<PageId> resident = m.pool->resident_pages();
  // Host copies dirtied meanwhile are staged in the first pass and dropped after one commit.
  for (int pass = 0; pass < 2; ++pass) {
    bool staged = false;
    for (PageId p : resident) {
      STRATA_ASSIGN_OR_RETURN(auto ev, internal::TryEvict(m, p, /*may_stage=*/pass == 0, false));
      if (ev.frame != nullptr) m.pool->put(ev.frame);
      staged = staged || ev.staged;
    }
    if (!staged) break;
    STRATA_RETURN_IF_ERROR(m.write_back.commit(/*forced=*/true));
  }
  return Status::Ok();
}

Status MemoryManager::save_snapshot(const std::string& name, std::span<const PageId> pages) {
  NvmeTier* nvme = m_->opt.nvme;
  if (nvme == nullptr) return Status::FailedPrecondition("snapshot " + name + ": no NVMe tier");
  STRATA_RETURN_IF_ERROR(flush(pages));
  STRATA_RETURN_IF_ERROR(commit_nvme());
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> existing, nvme->snapshot_names());
  if (std::find(existing.begin(), existing.end(), name) != existing.end()) {
    STRATA_RETURN_IF_ERROR(nvme->delete_snapshot(name));
  }
  return nvme->save_snapshot(name);
}

Result<std::vector<std::string>> MemoryManager::snapshot_names() const {
  if (m_->opt.nvme == nullptr) return std::vector<std::string>{};
  return m_->opt.nvme->snapshot_names();
}

Status MemoryManager::delete_snapshot(const std::string& name) {
  if (m_->opt.nvme == nullptr)
    return Status::FailedPrecondition("snapshot " + name + ": no NVMe tier");
  return m_->opt.nvme->delete_snapshot(name);
}

}  // namespace strata::memory
