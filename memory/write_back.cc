#include "memory/write_back.h"

#include <algorithm>

#include <string>
#include <utility>

// Note [Grouped write-back]
// A dirty host copy must reach NVMe before its frame is reused, and the NvmeTier only promises
// that a staged buffer may change once the batch holding it is committed: storage::PageStore
// reports the end of a batch's writes as a whole, in commit(), not per page. So what frees a
// dirty frame is a commit (one fdatasync + one synchronous RocksDB batch), and one commit per
// evicted page serialised a paged training step on commits. Instead the frame source
// (memory/frame_source.cc) stages dirty victims (their writes start at once and run
// concurrently in the I/O engine) and lets one commit cover several of them:
// - Recency order (LRU, or no access plan): the run of dirty victims at the front of the order,
//   up to group_pages, is staged and committed together; the request takes the run's first
//   page, and the others stay resident as clean copies that the next evictions drop without
//   I/O. The run stops at the first droppable clean copy (that copy is not taken: the order is
//   kept exactly), so only pages that are next in line are written early; one of them written
//   again before its eviction is the rare wasted write.
// - Access plan (Belady): the order beyond the first victim is no forecast (a page just used
//   jumps ahead of the others: cyclic plans evict the most recently used pages), so writing the
//   next dirty pages early would mostly waste writes. Write-behind instead: the request stages
//   only the first victim when it is dirty and takes the first clean copy further down; the
//   staged frames are freed by a later commit, when behind_pages are staged (at most a quarter
//   of the host pool, so that eviction still chooses among most of it) or nothing droppable is
//   left.
// Either way forced_commits counts these commits; write_back_batch_pages = 1 (or a byte limit of
// one page) gives back one commit per write-back. A write to a staged page forces the commit
// first.

// Note [Commit order]
// With no lock held across a commit, two commits can be in flight at once: a forced one (an
// eviction's write-back) and the caller's commit_nvme. The later one may find its own batch
// empty and return while the earlier batch, holding versions the caller staged, is still being
// committed; a snapshot taken right after would record those pages' older versions (a resumed
// run read stale moments: kill_resume_test under Belady's write-behind, 2026-11-25). So batches
// are numbered when sealed, and a caller's commit waits, without a lock, until every batch
// sealed before its own has finished. It also takes on their failure: a batch that failed may
// hold versions the caller staged (in flight as the caller sealed, or failed between the
// caller's staging and its seal), whose pages are dirty again with the older versions
// committed; so a caller's commit returns the failure of any batch sealed since the previous
// caller's commit (a snapshot after a successful-looking commit held parameters one update
// behind: `strata stress`, eio-after=68 in a background write-back, 2026-11-25). A failed
// write-back ends the run anyway; this makes the checkpoint fail with it instead of recording
// stale pages.

namespace strata::memory::internal {

Status WriteBack::stage(PageId p, std::unique_lock<std::mutex>& lock) {
  PageEntry& e = pages_[p];
  e.begin_stage();
  void* frame = e.frame;
  lock.unlock();
  // The tier submits the write and returns; no lock of ours is held meanwhile.
  Status st = nvme_->stage_write(p, frame);
  lock.lock();
  e.finish_stage(st.ok());
  e.cv.notify_all();
  if (!st.ok()) return st.with_context("writing page " + std::to_string(p) + " to NVMe");
  staged_.fetch_add(1);
  Counters::bump(counters_.nvme_write_bytes, pool_.page_bytes());
  return st;
}

Status WriteBack::commit(bool forced) {
  if (nvme_ == nullptr) {
    return Status::FailedPrecondition("no NVMe tier: there is nothing to commit");
  }
  std::unique_ptr<NvmeBatch> batch;
  uint64_t number = 0;
  {
    std::lock_guard lock(seal_mu_);
    staged_.store(0);
    batch = nvme_->seal();
    number = ++sealed_;
    in_flight_.insert(number);
  }
  Status st = commit_sealed(std::move(batch), forced);
  std::unique_lock lock(seal_mu_);
  in_flight_.erase(number);
  if (!st.ok()) failed_.emplace(number, st);
  done_cv_.notify_all();
  if (!forced) {
    done_cv_.wait(lock, [&] { return in_flight_.empty() || *in_flight_.begin() > number; });
    const auto earlier = failed_.upper_bound(checked_through_);
    if (st.ok() && earlier != failed_.end() && earlier->first < number) st = earlier->second;
    checked_through_ = std::max(checked_through_, number);
  }
  return st;
}

Status WriteBack::commit_sealed(std::unique_ptr<NvmeBatch> batch, bool forced) {
  // Nothing staged (e.g. another thread's commit took this group's pages): no commit, so that
  // nvme_commits and forced_commits count real commits only.
  if (batch->pages().empty()) return Status::Ok();
  const std::vector<PageId> list = batch->pages();
  Status st = nvme_->commit(std::move(batch));
  for (PageId p : list) {
    PageEntry& e = pages_[p];
    std::unique_lock lock(e.mu);
    // The stager marks the page kStaged right after the tier took the write. Wait for that
    // before looking for a discard: a discard can land between the stager's kStaged and this
    // thread's wake-up (ASan run of ConcurrentRandomAccessMatchesShadow, 2026-11-25: the check
    // came first, the wait let the discard in, and the commit found the page kZero).
    e.cv.wait(lock, [&] { return e.state != PageState::kStaging; });
    if (e.staged_dead_frame != nullptr) {
      // Discarded after it was staged (Note [Page states]): committed or not, the version is
      // dead, and its buffer may be reused now.
      pool_.put(std::exchange(e.staged_dead_frame, nullptr));
    } else {
      e.finish_commit(st.ok());
    }
    e.cv.notify_all();
  }
  Counters::bump(counters_.commits);
  if (forced) Counters::bump(counters_.forced_commits);
  pool_.wake();
  return st.ok()
             ? st
             : st.with_context("committing " + std::to_string(list.size()) + " NVMe page versions");
}

}  // namespace strata::memory::internal
