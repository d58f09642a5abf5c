// WriteBack (internal to memory/): gets dirty host copies onto NVMe — staging each page's new
// version and committing staged versions in groups (Note [Grouped write-back] in
// write_back.cc) — without holding a lock across the tier's I/O or commit (Note [Locking] in
// memory_manager.cc).
// Threads: every method from any thread. stage() expects the page's mutex held through `lock`
// and releases it while the tier starts the write; commit() takes page mutexes one at a time
// after the tier's commit returned.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>

#include "core/util/status.h"
#include "memory/host_frame_pool.h"
#include "memory/manager_counters.h"
#include "memory/nvme_tier.h"
#include "memory/page_table.h"

namespace strata::memory::internal {

class WriteBack {
 public:
  // `nvme` may be null (no NVMe tier): then nothing is ever staged and commit() refuses.
  WriteBack(NvmeTier* nvme, PageTable& pages, HostFramePool& pool, Counters& counters)
      : nvme_(nvme), pages_(pages), pool_(pool), counters_(counters) {}

  bool enabled() const { return nvme_ != nullptr; }
  // Stages page p's dirty host copy (kDirty -> kStaging -> kStaged; back to kDirty on error).
  Status stage(PageId p, std::unique_lock<std::mutex>& lock);
  // Versions staged since the last commit sealed its batch (approximate under concurrency:
  // it steers grouping only).
  uint64_t staged() const { return staged_.load(); }
  // Commits what is staged: the tier's batch is sealed and committed with no lock held, then
  // its pages become kClean (kDirty again if the commit failed) and the buffers of discarded
  // versions return to the pool. `forced`: the manager's own commit (MemoryStats). A commit
  // that is not forced (the caller's commit_nvme) returns only once every commit sealed before
  // it has finished too (Note [Commit order] in write_back.cc). FailedPrecondition without an
  // NVMe tier.
  Status commit(bool forced);

 private:
  Status commit_sealed(std::unique_ptr<NvmeBatch> batch, bool forced);

  NvmeTier* const nvme_;
  PageTable& pages_;
  HostFramePool& pool_;
  Counters& counters_;
  std::atomic<uint64_t> staged_{0};
  // Note [Commit order]: seal_mu_ orders sealing and numbering batches (no I/O under it);
  // in_flight_ holds the numbers of the commits not finished yet.
  std::mutex seal_mu_;
  std::condition_variable done_cv_;
  uint64_t sealed_ = 0;
  std::set<uint64_t> in_flight_;
  // Batches whose commit failed, by number (a failure ends the run: a few entries at most), and
  // the highest number a caller's commit has answered for.
  std::map<uint64_t, Status> failed_;
  uint64_t checked_through_ = 0;
};

}  // namespace strata::memory::internal
