#include "memory/memory_manager.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "core/util/log.h"
#include "core/util/sizes.h"
#include "memory/access_plan.h"
#include "memory/worker_pool.h"
#include "storage/aligned_buffer.h"

// Note [Locking]
// Page state (copies, pins, busy, staged) is guarded by that page's mutex. A frame pool's free
// list, counters and resident set are guarded by the pool's mutex. Order: page -> pool; a pool
// mutex is never held while taking a page mutex, and at most one page mutex is held at a time.
// `busy` marks a page whose copies one thread is changing outside the lock (a load, a
// write-back); while it is set nobody else pins, evicts or moves that page, so the owner may
// read the page's frame pointers without the lock. No mutex is held across a copy, an I/O, a
// commit or a wait for a frame.
//
// Note [No hold and wait]
// Frames are taken in one direction only: a device frame may wait for a host frame (write-back
// of a dirty device copy, NVMe -> device staging), a host frame may wait for NVMe (write-back
// and commit), never the reverse. A request that waits for a frame of its own holds no busy
// page and no other frame, and if the page turns out busy or pinned once it has the frame, it
// gives the frame back before waiting. So every wait for a frame ends when callers release
// pins, whatever the budgets (down to one page per tier).
//
// Note [Grouped write-back]
// A dirty host copy must reach NVMe before its frame is reused, and the NvmeTier only promises
// that a staged buffer may change once commit() returned: storage::PageStore reports the end of
// a batch's writes as a whole, in commit(), not per page (and memory/ cannot change that). So
// what frees a dirty frame is a commit (one fdatasync + one synchronous RocksDB batch), and one
// commit per evicted page serialised a paged training step on commits. Instead get_frame stages
// dirty victims (their writes start at once and run concurrently in the I/O engine) and lets
// one commit cover several of them:
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
//   of the host pool, kBehindPoolFraction, so that eviction still chooses among most of it) or
//   nothing droppable is left.
// Either way forced_commits counts these commits; write_back_batch_pages = 1 (or a byte limit of
// one page) gives back one commit per write-back. Staged pages are busy only while they are
// staged, never while the commit runs; a write to a staged page forces the commit first, as
// before.
//
// Note [Discard]
// discard() drops every copy and sets `zero`, so the page reads as zeros and nothing writes it
// back (a zero page's copies are all droppable, flush skips it). One case needs care: a page
// whose host copy is the buffer of a staged, uncommitted NVMe version. The tier cannot take a
// staged write back and its buffer must stay unchanged until the commit, so the frame moves to
// `staged_dead_frame` (held, not resident, not a copy) and the commit returns it to the pool
// and does not mark the page nvme_valid. Until that commit the page keeps nvme_staged (one
// staged version per page), so a new version of it is only staged after the commit; its new
// copies may be pinned for write meanwhile, as they are not the staged buffer.
//
// Note [Progress and stalls]
// Waiters (for a page to become free, for a frame) sleep on a condition variable in slices of
// kWaitSlice and re-check; anything that could unblock them (release, frame returned, load done,
// commit) bumps progress_ and notifies. A waiter whose own wait lasts stall_timeout_ms fails
// with Timeout and the stall report.

namespace strata::memory {

const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kDevice:
      return "device";
    case Tier::kHost:
      return "host";
    case Tier::kNvme:
      return "nvme";
  }
  return "unknown";
}

namespace {

constexpr int kDev = 0;
constexpr int kHostT = 1;
constexpr auto kWaitSlice = std::chrono::milliseconds(20);
// Write-behind holds at most 1/this of the host pool in staged frames (Note [Grouped write-back]).
constexpr uint64_t kBehindPoolFraction = 4;
const char* kFlag[2] = {"--gpu-mem", "--host-mem"};

std::string SizeFlagValue(uint64_t bytes) {
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "M";
  return std::to_string((bytes + kKiB - 1) / kKiB) + "K";
}

struct Holder {
  std::string name;
  Tier tier;
  Access access;
};

struct PageState {
  std::mutex mu;
  std::condition_variable cv;
  void* frame[2] = {nullptr, nullptr};
  bool valid[2] = {false, false};
  bool nvme_valid = false;
  bool nvme_staged = false;  // the NvmeTier holds an uncommitted version of this page
  // Non-null: that staged version was discarded (Note [Discard]); this is its buffer, a host
  // frame that the commit gives back. Null: a staged version's buffer is the host copy.
  void* staged_dead_frame = nullptr;
  bool zero = true;   // never written: its contents are zeros, so any copy can be dropped
  bool busy = false;  // one thread moves this page's copies (Note [Locking])
  bool loading[2] = {false, false};  // one request is getting a frame for this tier's copy
  int readers = 0;
  bool writer = false;
  std::vector<Holder> holders;
  std::atomic<uint64_t> last_use[2] = {0, 0};
};

// The pages with a copy on one tier: O(1) insert and erase, and contiguous, because eviction
// copies the whole set for every frame it takes (walking an unordered_set's nodes was half the
// cost of an eviction in a 20k-page pool). Inserting a member or erasing a non-member does
// nothing.
class ResidentSet {
 public:
  void reset(uint64_t num_pages) {
    STRATA_CHECK(num_pages < kAbsent) << num_pages << " pages";
    pos_.assign(num_pages, kAbsent);
  }
  void insert(PageId p) {
    if (pos_[p] != kAbsent) return;
    pos_[p] = uint32_t(pages_.size());
    pages_.push_back(p);
  }
  void erase(PageId p) {
    const uint32_t i = pos_[p];
    if (i == kAbsent) return;
    const PageId last = pages_.back();
    pages_[i] = last;
    pos_[last] = i;
    pages_.pop_back();
    pos_[p] = kAbsent;
  }
  size_t size() const { return pages_.size(); }
  std::vector<PageId>::const_iterator begin() const { return pages_.begin(); }
  std::vector<PageId>::const_iterator end() const { return pages_.end(); }

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  std::vector<PageId> pages_;
  std::vector<uint32_t> pos_;  // index in pages_, per page id
};

struct FramePool {
  uint64_t capacity_frames = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<void*> free;
  uint64_t allocated = 0;  // frames that exist
  uint64_t in_use = 0;     // frames held by pages or in transit
  uint64_t peak = 0;       // of in_use
  ResidentSet resident;
  std::atomic<int> waiters{0};  // threads in get_frame's wait (see wake())
};

class StallClock {
 public:
  explicit StallClock(uint64_t timeout_ms)
      : timeout_(std::chrono::milliseconds(timeout_ms)), start_(std::chrono::steady_clock::now()) {}
  bool expired() const { return std::chrono::steady_clock::now() - start_ >= timeout_; }

 private:
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point start_;
};

const std::string& ThisThreadName() {
  thread_local const std::string name = [] {
    std::ostringstream os;
    os << "thread " << std::this_thread::get_id();
    return os.str();
  }();
  return name;
}

// Eviction candidates in victim order, sorted only as far as the caller reads: an eviction
// mostly takes one of the first few, and sorting a large pool's whole resident set for every
// frame (a 24 GiB pool of 1 MiB pages holds 24k) cost more than the eviction. Each read past the
// sorted prefix extends it by partial_sort, at least doubling it. Order: higher score first,
// then lower page id.
class VictimOrder {
 public:
  explicit VictimOrder(std::vector<std::pair<uint64_t, PageId>> scored)
      : v_(std::move(scored)) {}
  size_t size() const { return v_.size(); }
  PageId operator[](size_t i) {
    if (i >= sorted_) {
      const size_t upto = std::min(v_.size(), std::max(i + 1, 2 * sorted_ + 8));
      std::partial_sort(v_.begin() + sorted_, v_.begin() + upto, v_.end(),
                        [](const auto& a, const auto& b) {
                          return a.first != b.first ? a.first > b.first : a.second < b.second;
                        });
      sorted_ = upto;
    }
    return v_[i].second;
  }

 private:
  std::vector<std::pair<uint64_t, PageId>> v_;
  size_t sorted_ = 0;
};

}  // namespace

struct MemoryManager::Impl {
  MemoryManagerOptions opt;
  uint64_t page = 0;
  std::unique_ptr<PageState[]> pages;
  FramePool pools[2];
  storage::AlignedBuffer host_pool;
  storage::AlignedBuffer zero_page;
  std::unique_ptr<Stream> h2d;
  std::unique_ptr<Stream> d2h;
  std::shared_ptr<spdlog::logger> log = Logger("memory");

  std::mutex nvme_mu;  // serialises stage_write/commit with staged_pages
  std::vector<PageId> staged_pages;

  // Read on every acquire: an atomic shared_ptr, no mutex.
  std::atomic<std::shared_ptr<const internal::AccessPlan>> plan;
  std::atomic<uint64_t> plan_pos{0};

  std::mutex batch_mu;  // serialises acquire_all batches (no hold-and-wait between batches)

  std::atomic<uint64_t> tick{1};
  std::atomic<uint64_t> progress{0};
  std::atomic<uint64_t> h2d_bytes{0}, d2h_bytes{0}, nvme_read_bytes{0}, nvme_write_bytes{0};
  std::atomic<uint64_t> hits{0}, misses{0}, evictions{0}, write_backs{0};
  std::atomic<uint64_t> commits{0}, forced_commits{0}, admission_waits{0}, discards{0};
  // Note [Grouped write-back]: pages per group write-back, and the staged pages at which
  // write-behind commits.
  uint64_t group_pages = 1;
  uint64_t behind_pages = 1;

  std::mutex prefetch_mu;
  std::condition_variable prefetch_cv;
  uint64_t prefetches = 0;

  std::unique_ptr<internal::WorkerPool> workers;

  // ---- helpers ---------------------------------------------------------------------------
  // Wakes the frame waiters of pool t, if any. progress_ and waiters are seq_cst: a waiter
  // registers before it reads progress_, a waker bumps progress_ before it reads waiters, so
  // either the waker sees the waiter or the waiter sees the new progress (no lost wake-up, and
  // no pool mutex on the release path when nobody waits).
  void wake(int t) {
    progress.fetch_add(1);
    if (pools[t].waiters.load() > 0) {
      { std::lock_guard lock(pools[t].mu); }
      pools[t].cv.notify_all();
    }
  }
  void bump(int t) { wake(t); }

  std::shared_ptr<const internal::AccessPlan> current_plan() { return plan.load(); }

  void advance_plan(PageId p, Tier t) {
    auto pl = current_plan();
    if (!pl || pl->size() == 0) return;
    uint64_t cur = plan_pos.load(std::memory_order_relaxed);
    const uint64_t next = pl->next_use(p, t, cur);
    if (next == internal::AccessPlan::kNever || next >= cur + pl->size()) return;
    while (cur < next + 1 &&
           !plan_pos.compare_exchange_weak(cur, next + 1, std::memory_order_relaxed)) {
    }
  }

  bool compatible(const PageState& s, Access a) const {
    return a == Access::kRead ? !s.writer : (!s.writer && s.readers == 0);
  }

  // The host copy is the buffer of a staged NVMe version: it must stay unchanged and resident
  // until the commit, so it is neither written nor dropped. Expects p's mutex held.
  static bool host_staged(const PageState& s) {
    return s.nvme_staged && s.staged_dead_frame == nullptr;
  }

  void put_frame(int t, void* f) {
    {
      std::lock_guard lock(pools[t].mu);
      pools[t].free.push_back(f);
      --pools[t].in_use;
    }
    wake(t);
  }

  void add_resident(int t, PageId p) {
    std::lock_guard lock(pools[t].mu);
    pools[t].resident.insert(p);
  }
  void remove_resident(int t, PageId p) {
    std::lock_guard lock(pools[t].mu);
    pools[t].resident.erase(p);
  }

  // Pins a copy that is valid on t; expects p's mutex held and compatibility checked.
  PageRef pin_locked(MemoryManager* mm, PageId p, int t, Access a, const std::string& holder) {
    PageState& s = pages[p];
    if (a != Access::kRead) {
      STRATA_CHECK(!host_staged(s)) << "write pin of page " << p << " whose NVMe version is staged";
      for (int o = 0; o < 2; ++o) {
        if (o == t || !s.valid[o]) continue;
        void* f = s.frame[o];
        s.frame[o] = nullptr;
        s.valid[o] = false;
        remove_resident(o, p);
        put_frame(o, f);
      }
      s.nvme_valid = false;
      s.zero = false;
      s.writer = true;
    } else {
      ++s.readers;
    }
    s.holders.push_back(Holder{holder, Tier(t), a});
    s.last_use[t].store(tick.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
    return PageRef(mm, p, Tier(t), a, s.frame[t]);
  }

  Status copy(void* dst, const void* src, CopyKind kind) {
    Stream& stream = kind == CopyKind::kHostToDevice ? *h2d : *d2h;
    STRATA_RETURN_IF_ERROR(opt.device->copy_async(dst, src, page, kind, stream));
    auto done = std::make_shared<std::atomic<bool>>(false);
    stream.launch([done] { done->store(true, std::memory_order_release); });
    std::unique_ptr<Event> event = opt.device->create_event();
    stream.record(*event);
    event->synchronize();
    if (!done->load(std::memory_order_acquire)) {
      Status st = stream.synchronize();
      return st.ok() ? Status::Internal("page copy on stream " + stream.name() + " did not run")
                     : st.WithContext("page copy on stream " + stream.name());
    }
    (kind == CopyKind::kHostToDevice ? h2d_bytes : d2h_bytes).fetch_add(page);
    return Status::Ok();
  }

  Status nvme_read(PageId p, void* buffer) {
    Status st = opt.nvme->read(p, buffer).get();
    if (!st.ok()) return st.WithContext("reading page " + std::to_string(p) + " from NVMe");
    nvme_read_bytes.fetch_add(page);
    return st;
  }

  // Stages p's host copy on NVMe. Expects p busy (owned by the caller) and host-valid.
  Status stage(PageId p) {
    PageState& s = pages[p];
    void* f;
    {
      std::lock_guard lock(s.mu);
      f = s.frame[kHostT];
      s.nvme_staged = true;
    }
    Status st;
    {
      std::lock_guard lock(nvme_mu);
      st = opt.nvme->stage_write(p, f);
      if (st.ok()) staged_pages.push_back(p);
    }
    if (!st.ok()) {
      std::lock_guard lock(s.mu);
      s.nvme_staged = false;
      return st.WithContext("writing page " + std::to_string(p) + " to NVMe");
    }
    nvme_write_bytes.fetch_add(page);
    return st;
  }

  size_t staged_count() {
    std::lock_guard lock(nvme_mu);
    return staged_pages.size();
  }

  Status commit(bool forced) {
    if (opt.nvme == nullptr) {
      return Status::FailedPrecondition(
          "no NVMe tier: there is nothing to commit; give --nvme-dir");
    }
    std::vector<PageId> list;
    Status st;
    {
      std::lock_guard lock(nvme_mu);
      // Nothing staged (e.g. another thread's commit took this group's pages): no commit, so
      // that nvme_commits and forced_commits count real commits only.
      if (staged_pages.empty()) return Status::Ok();
      list.swap(staged_pages);
      st = opt.nvme->commit();
    }
    for (PageId p : list) {
      PageState& s = pages[p];
      std::lock_guard lock(s.mu);
      s.nvme_staged = false;
      if (s.staged_dead_frame != nullptr) {
        // Discarded after it was staged (Note [Discard]): committed or not, the version is
        // dead, and its buffer may be reused now.
        put_frame(kHostT, std::exchange(s.staged_dead_frame, nullptr));
      } else if (st.ok()) {
        s.nvme_valid = true;
      }
      s.cv.notify_all();
    }
    commits.fetch_add(1);
    if (forced) forced_commits.fetch_add(1);
    bump(kHostT);
    return st.ok() ? st
                   : st.WithContext("committing " + std::to_string(list.size()) +
                                    " NVMe page versions");
  }

  // Gives p a host copy: takes a host frame, `fill`s it (a D2H copy, an NVMe read) and makes it
  // p's valid host copy; on failure the frame goes back to the pool. Expects p busy (owned by
  // the caller). Returns the frame.
  Result<void*> fill_host_copy(PageId p, const std::function<Status(void*)>& fill) {
    PageState& s = pages[p];
    STRATA_ASSIGN_OR_RETURN(void* hf, get_frame(kHostT, p, /*may_wait=*/true, 0));
    Status st = fill(hf);
    if (!st.ok()) {
      put_frame(kHostT, hf);
      return st;
    }
    std::lock_guard lock(s.mu);
    s.frame[kHostT] = hf;
    s.valid[kHostT] = true;
    add_resident(kHostT, p);
    return hf;
  }

  // Writes the only copy of p on the device to a host frame (D2H). Expects p busy (owned by
  // the caller). Host copies go to NVMe by staging instead (try_evict).
  Status write_back_to_host(PageId p) {
    PageState& s = pages[p];
    void* dev_frame;
    {
      std::lock_guard lock(s.mu);
      dev_frame = s.frame[kDev];
    }
    STRATA_RETURN_IF_ERROR(fill_host_copy(p, [&](void* hf) {
                             return copy(hf, dev_frame, CopyKind::kDeviceToHost);
                           }).status());
    write_backs.fetch_add(1);
    return Status::Ok();
  }

  // What try_evict did with a victim.
  struct Eviction {
    void* frame = nullptr;  // the victim's frame, now the caller's
    bool staged = false;    // a dirty host copy: its new NVMe version is staged instead
    bool clean = false;     // peek_clean: the copy is clean and droppable; it was left in place
  };

  // Tries to take v's copy on tier t for reuse; nothing happens when v cannot be dropped now.
  // A dirty device copy is written back to the host first. A dirty host copy is never dropped
  // here: with `may_stage` its new NVMe version is staged (the write starts) and its frame is
  // reusable once a commit made that version durable (Note [Grouped write-back]). `peek_clean`:
  // only report a droppable clean copy. Errors come from the write-back or the staging.
  // Runs `move` on page s with s marked busy and its mutex released (no mutex is held across a
  // move), then, relocked, wakes whoever waits for the page or for frames: copies of a page that
  // is no longer busy may be evictable now.
  Status while_busy(PageState& s, std::unique_lock<std::mutex>& lock,
                    const std::function<Status()>& move) {
    s.busy = true;
    lock.unlock();
    Status st = move();
    lock.lock();
    s.busy = false;
    s.cv.notify_all();
    wake(kDev);
    wake(kHostT);
    return st;
  }

  Result<Eviction> try_evict(PageId v, int t, bool may_stage, bool peek_clean) {
    Eviction out;
    PageState& s = pages[v];
    std::unique_lock lock(s.mu);
    if (s.busy || !s.valid[t] || s.readers > 0 || s.writer) return out;
    auto other_copy = [&] {
      return s.zero ||
             (t == kDev ? (s.valid[kHostT] || s.nvme_valid) : (s.valid[kDev] || s.nvme_valid));
    };
    // A staged buffer stays until the commit. A page whose staged version was discarded may
    // drop a clean host copy, but a dirty one waits: it can only be staged after the commit.
    if (t == kHostT && s.nvme_staged && (host_staged(s) || !other_copy())) return out;
    if (t == kHostT && !other_copy()) {
      if (opt.nvme == nullptr || !may_stage) return out;
      Status st = while_busy(s, lock, [&] { return stage(v); });
      lock.unlock();
      if (!st.ok()) return st;
      write_backs.fetch_add(1, std::memory_order_relaxed);
      out.staged = true;
      return out;
    }
    if (peek_clean) {
      out.clean = other_copy();
      return out;
    }
    if (!other_copy()) {
      Status st = while_busy(s, lock, [&] { return write_back_to_host(v); });
      if (!st.ok()) return st;
      if (s.readers > 0 || s.writer || !s.valid[t] || !other_copy()) return out;
    }
    out.frame = s.frame[t];
    s.frame[t] = nullptr;
    s.valid[t] = false;
    remove_resident(t, v);
    evictions.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  // Victims in the order to try: Belady (farthest next use first) or LRU (oldest first).
  // *planned: the order came from an access plan (Belady), not from recency. *demoted: how many
  // demoted copies (demote(): last_use 0) lead a recency order.
  VictimOrder rank(int t, const std::vector<PageId>& candidates, uint64_t* min_next_use,
                   bool* planned, size_t* demoted) {
    auto pl = opt.policy == EvictionPolicy::kBelady ? current_plan() : nullptr;
    *planned = pl && pl->size() > 0;
    *demoted = 0;
    std::vector<std::pair<uint64_t, PageId>> scored;
    scored.reserve(candidates.size());
    const uint64_t pos = plan_pos.load(std::memory_order_relaxed);
    for (PageId c : candidates) {
      uint64_t score;
      if (*planned) {
        score = pl->next_use(c, Tier(t), pos);
      } else {
        score = UINT64_MAX - pages[c].last_use[t].load(std::memory_order_relaxed);
      }
      // A prefetch evicts nothing needed no later than the page it brings in.
      if (min_next_use != nullptr && score <= *min_next_use) continue;
      if (!*planned && score == UINT64_MAX) ++*demoted;
      scored.emplace_back(score, c);
    }
    return VictimOrder(std::move(scored));
  }

  // A frame on tier t for page `for_page`: a free one, a new one, or one taken from a victim.
  // for_page's own copy on t (put there meanwhile by a write-back) is a victim like any other.
  // may_wait=false (prefetch) returns nullptr instead of waiting; `prefetch_next_use` > 0 then
  // also forbids evicting pages needed no later than it.
  Result<void*> get_frame(int t, PageId for_page, bool may_wait, uint64_t prefetch_next_use) {
    FramePool& pool = pools[t];
    StallClock clock(opt.stall_timeout_ms);
    bool counted_wait = false;
    Status alloc_error;
    for (;;) {
      const uint64_t seen = progress.load();
      std::vector<PageId> candidates;
      {
        std::lock_guard lock(pool.mu);
        void* f = nullptr;
        if (!pool.free.empty()) {
          f = pool.free.back();
          pool.free.pop_back();
        } else if (pool.allocated < pool.capacity_frames) {
          if (t == kHostT) {
            f = host_pool.data() + pool.allocated * page;
          } else {
            Result<void*> r = opt.device->alloc(page);
            if (r.ok()) {
              f = *r;
            } else {
              alloc_error = r.status();
            }
          }
          if (f != nullptr) ++pool.allocated;
        }
        if (f != nullptr) {
          ++pool.in_use;
          pool.peak = std::max(pool.peak, pool.in_use);
          return f;
        }
        candidates.assign(pool.resident.begin(), pool.resident.end());
        if (candidates.empty() && !alloc_error.ok() && pool.in_use == 0) {
          return alloc_error.WithContext("allocating a " + FormatBytes(page) + " device page");
        }
      }
      const bool prefetching = !may_wait;
      bool planned = false;
      // Demoted copies lead the recency order; a run that starts with them ends with them, so
      // pages still to be used soon are not written early behind them.
      size_t demoted_prefix = 0;
      VictimOrder ranked =
          rank(t, candidates, prefetching && prefetch_next_use > 0 ? &prefetch_next_use : nullptr,
               &planned, &demoted_prefix);
      // Dirty host victims are staged, not committed one by one (Note [Grouped write-back]):
      // in recency order the run of them at the front (up to group_pages), committed at once;
      // under an access plan only the first, and the request skips to a clean copy.
      const bool nvme_host = t == kHostT && opt.nvme != nullptr;
      const uint64_t stage_limit = !nvme_host ? 0 : planned ? 1 : group_pages;
      uint64_t staged_here = 0;
      bool commit_now = false;
      for (size_t i = 0; i < ranked.size(); ++i) {
        const PageId v = ranked[i];
        if (staged_here > 0 && demoted_prefix > 0 && i >= demoted_prefix) {
          commit_now = true;
          break;
        }
        // In recency order a clean copy after the run ends it: commit, take the run's first.
        const bool end_of_run = !planned && staged_here > 0;
        Result<Eviction> e = try_evict(v, t, staged_here < stage_limit, end_of_run);
        if (!e.ok()) {
          // Typically no free NVMe slot for one more version: a commit frees the old versions'.
          if (!nvme_host || staged_count() == 0) return e.status();
          commit_now = true;
          break;
        }
        if (e->frame != nullptr) return e->frame;
        if (e->clean) {
          commit_now = true;
          break;
        }
        if (e->staged) {
          ++staged_here;
          if (staged_count() >= (planned ? behind_pages : group_pages)) {
            commit_now = true;
            break;
          }
        }
      }
      // Nothing droppable is left but staged copies (the run, write-behind victims, pages that
      // flush() staged): the commit makes them clean.
      if (commit_now || (nvme_host && staged_count() > 0)) {
        STRATA_RETURN_IF_ERROR(commit(/*forced=*/true));
        continue;
      }
      if (!may_wait) return static_cast<void*>(nullptr);
      if (!counted_wait) {
        admission_waits.fetch_add(1, std::memory_order_relaxed);
        counted_wait = true;
      }
      pool.waiters.fetch_add(1);
      {
        std::unique_lock lock(pool.mu);
        pool.cv.wait_for(lock, kWaitSlice, [&] { return progress.load() != seen; });
      }
      pool.waiters.fetch_sub(1);
      if (clock.expired()) return stall_status(for_page, Tier(t), "a free page frame", true);
    }
  }

  // `for_frame`: the wait was for a frame (the budget is the limit), else for the page itself.
  // No tier: a wait for the page as a whole (discard).
  Status stall_status(PageId page_id, std::optional<Tier> t, const std::string& what,
                      bool for_frame = false) {
    std::string report = stall_report_impl();
    std::string hint = for_frame ? std::string("raise ") +
                                       (t == Tier::kDevice ? "--gpu-mem" : "--host-mem") +
                                       " or have holders release pages sooner"
                                 : "the holders below must release it";
    std::string msg = "page " + std::to_string(page_id) +
                      (t ? std::string(" on ") + TierName(*t) : std::string()) + ": waited " +
                      std::to_string(opt.stall_timeout_ms) + " ms for " + what +
                      " without progress; " + hint + ". Who holds what:\n" + report;
    log->warn("{}", msg);
    return Status::Timeout(msg);
  }

  std::string stall_report_impl() {
    std::ostringstream os;
    for (int t = 0; t < 2; ++t) {
      std::lock_guard lock(pools[t].mu);
      os << "  " << TierName(Tier(t)) << ": " << pools[t].in_use << "/" << pools[t].capacity_frames
         << " frames in use, " << pools[t].resident.size() << " resident pages\n";
    }
    int listed = 0;
    for (PageId p = 0; p < opt.num_pages && listed < 64; ++p) {
      PageState& s = pages[p];
      std::lock_guard lock(s.mu);
      if (s.holders.empty() && !s.busy && !s.loading[0] && !s.loading[1]) continue;
      ++listed;
      os << "  page " << p << (s.busy ? " (move in flight)" : "")
         << (s.loading[0] ? " (waiting for a device frame)" : "")
         << (s.loading[1] ? " (waiting for a host frame)" : "") << ":";
      for (const Holder& h : s.holders) {
        os << " [" << (h.access == Access::kRead ? "read" : "write") << " on " << TierName(h.tier)
           << " by " << h.name << "]";
      }
      os << "\n";
    }
    if (listed == 0) os << "  no page is pinned or moving\n";
    return os.str();
  }

  // Brings a valid copy of p into `frame` on tier t. Expects p busy (owned by the caller).
  Status load(PageId p, int t, Access a, void* frame) {
    PageState& s = pages[p];
    void* src_dev = nullptr;
    void* src_host = nullptr;
    bool nvme_valid;
    bool zero;
    {
      std::lock_guard lock(s.mu);
      if (s.valid[kDev]) src_dev = s.frame[kDev];
      if (s.valid[kHostT]) src_host = s.frame[kHostT];
      nvme_valid = s.nvme_valid;
      zero = s.zero;
    }
    if (a == Access::kOverwrite) return Status::Ok();
    STRATA_CHECK(zero || src_dev != nullptr || src_host != nullptr || nvme_valid)
        << "page " << p << " was written but has no valid copy anywhere";
    if (t == kHostT) {
      if (src_dev != nullptr) return copy(frame, src_dev, CopyKind::kDeviceToHost);
      if (nvme_valid) return nvme_read(p, frame);
      std::memset(frame, 0, page);
      return Status::Ok();
    }
    if (src_host != nullptr) return copy(frame, src_host, CopyKind::kHostToDevice);
    if (!nvme_valid) return copy(frame, zero_page.data(), CopyKind::kHostToDevice);
    // NVMe -> device stages through a host frame, which stays as a clean host copy.
    STRATA_ASSIGN_OR_RETURN(void* hf,
                            fill_host_copy(p, [&](void* f) { return nvme_read(p, f); }));
    return copy(frame, hf, CopyKind::kHostToDevice);
  }

  // The blocking acquire (and prefetch when !pin). Returns an empty PageRef for a prefetch.
  // The frame is taken while the page is *not* busy (only loading[t] is set, so that a second
  // request for this copy waits and shares the move): a request waiting for a frame holds no
  // page busy, so the evictions it waits for can always write back (Note [No hold and wait]).
  Result<PageRef> acquire_blocking(MemoryManager* mm, PageId p, int t, Access a,
                                   const std::string& holder, bool pin) {
    PageState& s = pages[p];
    StallClock clock(opt.stall_timeout_ms);
    std::unique_lock lock(s.mu);
    for (;;) {
      if (s.busy || s.loading[t] || (pin && !compatible(s, a)) || (!pin && s.writer)) {
        if (!pin) return PageRef();  // a prefetch never waits
        s.cv.wait_for(lock, kWaitSlice);
        if (clock.expired()) {
          lock.unlock();
          return stall_status(
              p, Tier(t),
              std::string(a == Access::kRead ? "read" : "write") + " access to the page");
        }
        continue;
      }
      if (pin && a != Access::kRead && host_staged(s)) {
        lock.unlock();
        STRATA_RETURN_IF_ERROR(commit(/*forced=*/true));
        lock.lock();
        continue;
      }
      if (s.valid[t]) {
        if (!pin) return PageRef();
        hits.fetch_add(1, std::memory_order_relaxed);
        return pin_locked(mm, p, t, a, holder);
      }
      s.loading[t] = true;
      lock.unlock();
      uint64_t prefetch_next_use = 0;
      if (!pin) {
        auto pl = current_plan();
        if (pl && opt.policy == EvictionPolicy::kBelady) {
          prefetch_next_use = pl->next_use(p, Tier(t), plan_pos.load(std::memory_order_relaxed));
        }
      }
      Result<void*> frame = get_frame(t, p, /*may_wait=*/pin, prefetch_next_use);
      lock.lock();
      if (!frame.ok() || *frame == nullptr) {
        s.loading[t] = false;
        s.cv.notify_all();
        if (!frame.ok()) return frame.status();
        return PageRef();  // prefetch found no room
      }
      if (s.busy || s.valid[t] || (pin && !compatible(s, a)) || (!pin && s.writer) ||
          (pin && a != Access::kRead && host_staged(s))) {
        // Someone moves or holds the page, or a write-back or NVMe staging put a copy on this
        // tier meanwhile: give the frame back rather than wait holding it (or keep two copies).
        s.loading[t] = false;
        s.cv.notify_all();
        lock.unlock();
        put_frame(t, *frame);
        lock.lock();
        continue;
      }
      s.busy = true;
      lock.unlock();
      Status st = load(p, t, a, *frame);
      if (!st.ok()) put_frame(t, *frame);
      lock.lock();
      s.busy = false;
      s.loading[t] = false;
      s.cv.notify_all();
      if (!st.ok()) {
        lock.unlock();
        bump(t);
        return st;
      }
      s.frame[t] = *frame;
      s.valid[t] = true;
      add_resident(t, p);
      s.last_use[t].store(tick.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
      wake(kDev);  // the page's other copies (the move's source) may be evictable now
      wake(kHostT);
      if (!pin) return PageRef();
      misses.fetch_add(1, std::memory_order_relaxed);
      return pin_locked(mm, p, t, a, holder);
    }
  }

  Status check_request(PageId p, Tier t) const {
    if (p >= opt.num_pages) {
      return Status::InvalidArgument("page " + std::to_string(p) +
                                     " does not exist (the plan has " +
                                     std::to_string(opt.num_pages) + " pages)");
    }
    if (t == Tier::kNvme) {
      return Status::InvalidArgument("page " + std::to_string(p) +
                                     ": pages are acquired on the device or the host, not on NVMe");
    }
    if (t == Tier::kDevice && opt.device == nullptr) {
      return Status::InvalidArgument("page " + std::to_string(p) +
                                     ": no device tier (the manager was built without a device)");
    }
    return Status::Ok();
  }
};

// ---- PageRef ------------------------------------------------------------------------------

PageRef& PageRef::operator=(PageRef&& other) noexcept {
  if (this != &other) {
    release();
    manager_ = std::exchange(other.manager_, nullptr);
    page_ = other.page_;
    tier_ = other.tier_;
    access_ = other.access_;
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

uint64_t PageRef::bytes() const { return manager_ == nullptr ? 0 : manager_->page_bytes(); }

void PageRef::release() {
  if (manager_ == nullptr) return;
  MemoryManager* m = std::exchange(manager_, nullptr);
  data_ = nullptr;
  m->release(page_, tier_, access_);
}

// ---- MemoryManager ------------------------------------------------------------------------

Result<std::unique_ptr<MemoryManager>> MemoryManager::Create(const MemoryManagerOptions& o) {
  const uint64_t page = o.page_bytes;
  if (page < kMinPageBytes || (page & (page - 1)) != 0) {
    return Status::InvalidArgument("--page-size " + std::to_string(page) +
                                   " bytes is not a power of two of at least 4 KiB; use e.g. 16M");
  }
  if (o.num_pages == 0)
    return Status::InvalidArgument("memory manager: the page plan has no pages");
  if (o.nvme != nullptr && o.nvme->page_bytes() != page) {
    return Status::InvalidArgument("the NVMe store has " + FormatBytes(o.nvme->page_bytes()) +
                                   " pages but --page-size is " + FormatBytes(page) +
                                   "; use the store's page size or a new --nvme-dir");
  }
  const uint64_t budget[2] = {o.budgets.device_bytes, o.budgets.host_bytes};
  for (int t = 0; t < 2; ++t) {
    if (t == kDev && o.device == nullptr) continue;
    if (budget[t] < page) {
      return Status::ResourceExhausted(std::string(kFlag[t]) + " " + FormatBytes(budget[t]) +
                                       " is below one page (" + FormatBytes(page) + "); raise " +
                                       kFlag[t] + " to at least " + SizeFlagValue(page) +
                                       " or lower --page-size");
    }
  }
  if (o.write_back_batch_pages == 0) {
    return Status::InvalidArgument(
        "memory manager: write_back_batch_pages is 0; use 1 to commit every write-back alone");
  }
  auto impl = std::make_unique<Impl>();
  impl->opt = o;
  impl->page = page;
  impl->pages = std::make_unique<PageState[]>(o.num_pages);
  impl->pools[kDev].capacity_frames = o.device == nullptr ? 0 : o.budgets.device_bytes / page;
  for (FramePool& pool : impl->pools) pool.resident.reset(o.num_pages);
  impl->pools[kHostT].capacity_frames = o.budgets.host_bytes / page;
  impl->group_pages =
      std::max<uint64_t>(1, std::min(o.write_back_batch_pages, o.write_back_batch_bytes / page));
  impl->behind_pages = std::max<uint64_t>(
      1, std::min(impl->group_pages, impl->pools[kHostT].capacity_frames / kBehindPoolFraction));
  STRATA_ASSIGN_OR_RETURN(impl->host_pool, storage::AlignedBuffer::Allocate(
                                               impl->pools[kHostT].capacity_frames * page));
  if (o.device != nullptr) {
    STRATA_RETURN_IF_ERROR(o.device->register_host(impl->host_pool.data(), impl->host_pool.size()));
    STRATA_ASSIGN_OR_RETURN(impl->zero_page, storage::AlignedBuffer::Allocate(page));
    impl->h2d = o.device->create_stream("memory.h2d");
    impl->d2h = o.device->create_stream("memory.d2h");
  }
  if (o.nvme != nullptr) {
    uint64_t known = 0;
    for (PageId p : o.nvme->committed_pages()) {
      if (p < o.num_pages) {
        impl->pages[p].nvme_valid = true;
        impl->pages[p].zero = false;
        ++known;
      }
    }
    if (known > 0) impl->log->info("memory: {} pages found on NVMe", known);
    STRATA_RETURN_IF_ERROR(o.nvme->register_buffer(impl->host_pool.data(), impl->host_pool.size()));
  }
  impl->workers = std::make_unique<internal::WorkerPool>(o.max_workers);
  impl->log->info(
      "memory: {} pages of {}; device {} ({} pages), host pool {} ({} pages), nvme {}, "
      "eviction {}",
      o.num_pages, FormatBytes(page), FormatBytes(impl->pools[kDev].capacity_frames * page),
      impl->pools[kDev].capacity_frames, FormatBytes(impl->host_pool.size()),
      impl->pools[kHostT].capacity_frames, o.nvme != nullptr ? "on" : "off",
      o.policy == EvictionPolicy::kBelady ? "belady" : "lru");
  return std::unique_ptr<MemoryManager>(new MemoryManager(std::move(impl)));
}

MemoryManager::MemoryManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MemoryManager::~MemoryManager() {
  Impl& m = *impl_;
  m.workers.reset();  // runs what is queued (prefetches), joins
  // A staged write reads its buffer, a frame of the host pool, until it completes (the checksum
  // is taken on completion): wait for those writes before the pool is freed. What was staged and
  // not committed is dropped, as a crash would drop it.
  if (m.opt.nvme != nullptr) m.opt.nvme->drop_staged();
  for (PageId p = 0; p < m.opt.num_pages; ++p) {
    PageState& s = m.pages[p];
    STRATA_CHECK(s.readers == 0 && !s.writer)
        << "MemoryManager destroyed while page " << p << " is still pinned";
  }
  if (m.opt.nvme != nullptr) m.opt.nvme->unregister_buffer(m.host_pool.data());
  if (m.opt.device != nullptr) {
    m.h2d.reset();
    m.d2h.reset();
    for (PageId p = 0; p < m.opt.num_pages; ++p) {
      if (m.pages[p].frame[kDev] != nullptr) m.opt.device->free(m.pages[p].frame[kDev]);
    }
    for (void* f : m.pools[kDev].free) m.opt.device->free(f);
    m.opt.device->unregister_host(m.host_pool.data()).IgnoreError();
  }
}

const MemoryManagerOptions& MemoryManager::options() const { return impl_->opt; }
uint64_t MemoryManager::page_bytes() const { return impl_->page; }

std::future<Result<PageRef>> MemoryManager::acquire(PageId page, Tier tier, Access access,
                                                    const AcquireOptions& options) {
  Impl& m = *impl_;
  std::promise<Result<PageRef>> promise;
  std::future<Result<PageRef>> future = promise.get_future();
  Status st = m.check_request(page, tier);
  if (!st.ok()) {
    promise.set_value(st);
    return future;
  }
  std::string holder = options.holder.empty() ? ThisThreadName() : options.holder;
  m.advance_plan(page, tier);
  const int t = static_cast<int>(tier);
  {
    PageState& s = m.pages[page];
    std::lock_guard lock(s.mu);
    if (!s.busy && s.valid[t] && m.compatible(s, access) &&
        !(access != Access::kRead && Impl::host_staged(s))) {
      m.hits.fetch_add(1, std::memory_order_relaxed);
      promise.set_value(m.pin_locked(this, page, t, access, holder));
      return future;
    }
  }
  auto shared = std::make_shared<std::promise<Result<PageRef>>>(std::move(promise));
  m.workers->submit([this, shared, page, t, access, holder = std::move(holder)] {
    shared->set_value(impl_->acquire_blocking(this, page, t, access, holder, /*pin=*/true));
  });
  return future;
}

Result<PageRef> MemoryManager::acquire_sync(PageId page, Tier tier, Access access,
                                            const AcquireOptions& options) {
  return acquire(page, tier, access, options).get();
}

std::future<Result<std::vector<PageRef>>> MemoryManager::acquire_all(
    std::vector<PageRequest> requests, const AcquireOptions& options) {
  Impl& m = *impl_;
  std::promise<Result<std::vector<PageRef>>> promise;
  auto future = promise.get_future();
  uint64_t per_tier[2] = {0, 0};
  std::unordered_set<PageId> seen;
  for (const PageRequest& r : requests) {
    Status st = m.check_request(r.page, r.tier);
    if (st.ok() && !seen.insert(r.page).second) {
      st = Status::InvalidArgument("acquire_all: page " + std::to_string(r.page) +
                                   " is listed twice");
    }
    if (!st.ok()) {
      promise.set_value(st);
      return future;
    }
    ++per_tier[static_cast<int>(r.tier)];
  }
  for (int t = 0; t < 2; ++t) {
    if (per_tier[t] > m.pools[t].capacity_frames) {
      const uint64_t need = per_tier[t] * m.page;
      promise.set_value(Status::ResourceExhausted(
          "acquire_all: " + std::to_string(per_tier[t]) + " pages (" + FormatBytes(need) +
          ") must be pinned on the " + TierName(Tier(t)) + " at once but " + kFlag[t] + " allows " +
          std::to_string(m.pools[t].capacity_frames) + " pages (" +
          FormatBytes(m.pools[t].capacity_frames * m.page) + "); raise " + kFlag[t] +
          " to at least " + SizeFlagValue(need) + " or lower --page-size"));
      return future;
    }
  }
  std::string holder = options.holder.empty() ? ThisThreadName() : options.holder;
  auto shared = std::make_shared<std::promise<Result<std::vector<PageRef>>>>(std::move(promise));
  m.workers->submit([this, shared, requests = std::move(requests), holder = std::move(holder)] {
    Impl& im = *impl_;
    std::lock_guard batch(im.batch_mu);
    std::vector<PageRef> refs;
    for (const PageRequest& r : requests) {
      im.advance_plan(r.page, r.tier);
      Result<PageRef> ref =
          im.acquire_blocking(this, r.page, static_cast<int>(r.tier), r.access, holder, true);
      if (!ref.ok()) {
        shared->set_value(ref.status());
        return;
      }
      refs.push_back(std::move(*ref));
    }
    shared->set_value(std::move(refs));
  });
  return future;
}

Status MemoryManager::demote(PageId page, Tier tier) {
  Impl& m = *impl_;
  STRATA_RETURN_IF_ERROR(m.check_request(page, tier));
  // 0 is older than every tick (ticks start at 1); a later release stamps a new tick again.
  m.pages[page].last_use[static_cast<int>(tier)].store(0, std::memory_order_relaxed);
  return Status::Ok();
}

void MemoryManager::prefetch(PageId page, Tier tier) {
  Impl& m = *impl_;
  if (!m.check_request(page, tier).ok()) return;
  {
    // Already there or on its way: nothing to do, and no worker needed.
    PageState& s = m.pages[page];
    const int t = static_cast<int>(tier);
    std::lock_guard lock(s.mu);
    if (s.valid[t] || s.loading[t] || s.busy) return;
  }
  {
    std::lock_guard lock(m.prefetch_mu);
    ++m.prefetches;
  }
  m.workers->submit([this, page, tier] {
    Impl& im = *impl_;
    Result<PageRef> r = im.acquire_blocking(this, page, static_cast<int>(tier), Access::kRead, "",
                                            /*pin=*/false);
    if (!r.ok())
      im.log->debug("prefetch of page {} to {} failed: {}", page, TierName(tier),
                    r.status().ToString());
    {
      std::lock_guard lock(im.prefetch_mu);
      --im.prefetches;
    }
    im.prefetch_cv.notify_all();
  });
}

void MemoryManager::drain_prefetches() {
  std::unique_lock lock(impl_->prefetch_mu);
  impl_->prefetch_cv.wait(lock, [&] { return impl_->prefetches == 0; });
}

void MemoryManager::release(PageId page, Tier tier, Access access) {
  Impl& m = *impl_;
  PageState& s = m.pages[page];
  {
    std::lock_guard lock(s.mu);
    if (access == Access::kRead) {
      STRATA_CHECK(s.readers > 0) << "release of page " << page << " that is not pinned for read";
      --s.readers;
    } else {
      STRATA_CHECK(s.writer) << "release of page " << page << " that is not pinned for write";
      s.writer = false;
    }
    for (auto it = s.holders.begin(); it != s.holders.end(); ++it) {
      if (it->tier == tier && (it->access == Access::kRead) == (access == Access::kRead)) {
        s.holders.erase(it);
        break;
      }
    }
    const int t = static_cast<int>(tier);
    s.last_use[t].store(m.tick.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
    s.cv.notify_all();
  }
  m.bump(static_cast<int>(tier));
}

Status MemoryManager::flush(std::span<const PageId> pages) {
  Impl& m = *impl_;
  if (m.opt.nvme == nullptr) {
    return Status::FailedPrecondition("flush: no NVMe tier; give --nvme-dir");
  }
  for (PageId p : pages) {
    STRATA_RETURN_IF_ERROR(m.check_request(p, Tier::kHost));
    PageState& s = m.pages[p];
    StallClock clock(m.opt.stall_timeout_ms);
    std::unique_lock lock(s.mu);
    for (;;) {
      while (s.busy || s.writer) {
        s.cv.wait_for(lock, kWaitSlice);
        if (clock.expired()) {
          lock.unlock();
          return m.stall_status(p, Tier::kHost, "the page to flush it");
        }
      }
      // Discarded while staged and written again since (Note [Discard]): the new contents can
      // only be staged once the dead version is committed out of the way.
      if (s.staged_dead_frame == nullptr || s.zero || (!s.valid[kDev] && !s.valid[kHostT])) break;
      lock.unlock();
      STRATA_RETURN_IF_ERROR(m.commit(/*forced=*/true));
      lock.lock();
    }
    if (s.zero || s.nvme_valid || s.nvme_staged || (!s.valid[kDev] && !s.valid[kHostT])) continue;
    s.busy = true;
    const bool need_host = !s.valid[kHostT];
    void* dev_frame = s.frame[kDev];
    lock.unlock();
    Status st;
    if (need_host) {
      st = m.fill_host_copy(p, [&](void* hf) {
              return m.copy(hf, dev_frame, CopyKind::kDeviceToHost);
            }).status();
    }
    if (st.ok()) st = m.stage(p);
    lock.lock();
    s.busy = false;
    s.cv.notify_all();
    lock.unlock();
    m.bump(kHostT);
    STRATA_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

Status MemoryManager::flush_all() {
  std::vector<PageId> all(impl_->opt.num_pages);
  for (PageId p = 0; p < all.size(); ++p) all[p] = p;
  return flush(all);
}

Status MemoryManager::commit_nvme() { return impl_->commit(/*forced=*/false); }

Status MemoryManager::discard(PageId page) {
  Impl& m = *impl_;
  if (page >= m.opt.num_pages) {
    return Status::InvalidArgument("discard: page " + std::to_string(page) +
                                   " does not exist (the plan has " +
                                   std::to_string(m.opt.num_pages) + " pages)");
  }
  PageState& s = m.pages[page];
  StallClock clock(m.opt.stall_timeout_ms);
  std::unique_lock lock(s.mu);
  // A move in flight (a prefetch, a write-back) ends by itself; pins end when their holders
  // release them. Waiting rather than failing lets a caller discard right after its own
  // release, whatever prefetches are doing to the page.
  while (s.busy || s.readers > 0 || s.writer) {
    s.cv.wait_for(lock, kWaitSlice);
    if (clock.expired()) {
      lock.unlock();
      return m.stall_status(page, std::nullopt, "the page to discard it");
    }
  }
  for (int t = 0; t < 2; ++t) {
    if (!s.valid[t]) continue;
    const bool staged_buffer = t == kHostT && Impl::host_staged(s);
    void* f = std::exchange(s.frame[t], nullptr);
    s.valid[t] = false;
    m.remove_resident(t, page);
    if (staged_buffer) {
      s.staged_dead_frame = f;  // the commit gives it back (Note [Discard])
    } else {
      m.put_frame(t, f);
    }
  }
  STRATA_CHECK(!Impl::host_staged(s)) << "page " << page << " staged without a host copy";
  s.nvme_valid = false;
  s.zero = true;
  s.cv.notify_all();
  lock.unlock();
  m.discards.fetch_add(1, std::memory_order_relaxed);
  m.bump(kDev);
  m.bump(kHostT);
  return Status::Ok();
}

Status MemoryManager::evict_all(Tier tier) {
  Impl& m = *impl_;
  if (tier == Tier::kNvme) return Status::InvalidArgument("evict_all: NVMe copies are not evicted");
  const int t = static_cast<int>(tier);
  if (t == kHostT && m.opt.nvme != nullptr) {
    STRATA_RETURN_IF_ERROR(flush_all());
    STRATA_RETURN_IF_ERROR(commit_nvme());
  }
  std::vector<PageId> resident;
  {
    std::lock_guard lock(m.pools[t].mu);
    resident.assign(m.pools[t].resident.begin(), m.pools[t].resident.end());
  }
  // Host copies dirtied meanwhile are staged in the first pass and dropped after one commit.
  for (int pass = 0; pass < 2; ++pass) {
    bool staged = false;
    for (PageId p : resident) {
      STRATA_ASSIGN_OR_RETURN(auto e, m.try_evict(p, t, /*may_stage=*/pass == 0, false));
      if (e.frame != nullptr) m.put_frame(t, e.frame);
      staged = staged || e.staged;
    }
    if (!staged) break;
    STRATA_RETURN_IF_ERROR(m.commit(/*forced=*/true));
  }
  return Status::Ok();
}

uint64_t MemoryManager::trim_device() {
  Impl& m = *impl_;
  if (m.opt.device == nullptr) return 0;
  std::vector<void*> frames;
  {
    std::lock_guard lock(m.pools[kDev].mu);
    frames.swap(m.pools[kDev].free);
    m.pools[kDev].allocated -= frames.size();
  }
  for (void* f : frames) m.opt.device->free(f);
  return frames.size() * m.page;
}

void MemoryManager::set_access_plan(std::vector<PlannedAccess> plan) {
  impl_->plan.store(std::make_shared<const internal::AccessPlan>(plan));
  impl_->plan_pos.store(0, std::memory_order_relaxed);
}

void MemoryManager::set_plan_position(uint64_t position) {
  impl_->plan_pos.store(position, std::memory_order_relaxed);
}

MemoryStats MemoryManager::stats() const {
  Impl& m = *impl_;
  MemoryStats out;
  for (int t = 0; t < 2; ++t) {
    TierStats& ts = out.tiers[t];
    std::lock_guard lock(m.pools[t].mu);
    ts.capacity_bytes = m.pools[t].capacity_frames * m.page;
    ts.current_bytes = m.pools[t].in_use * m.page;
    ts.peak_bytes = m.pools[t].peak * m.page;
    ts.resident_pages = m.pools[t].resident.size();
  }
  for (PageId p = 0; p < m.opt.num_pages; ++p) {
    PageState& s = m.pages[p];
    std::lock_guard lock(s.mu);
    for (const Holder& h : s.holders) ++out.tiers[static_cast<int>(h.tier)].pinned_pages;
    if (s.nvme_valid || Impl::host_staged(s)) ++out.tiers[2].resident_pages;
  }
  if (m.opt.nvme != nullptr) {
    const NvmeTierStats ns = m.opt.nvme->stats();
    out.tiers[2].capacity_bytes = ns.capacity_bytes;
    out.tiers[2].current_bytes = ns.used_bytes;
    out.tiers[2].peak_bytes = ns.peak_bytes;
  }
  out.h2d_bytes = m.h2d_bytes.load();
  out.d2h_bytes = m.d2h_bytes.load();
  out.nvme_read_bytes = m.nvme_read_bytes.load();
  out.nvme_write_bytes = m.nvme_write_bytes.load();
  out.hits = m.hits.load();
  out.misses = m.misses.load();
  out.evictions = m.evictions.load();
  out.write_backs = m.write_backs.load();
  out.nvme_commits = m.commits.load();
  out.forced_commits = m.forced_commits.load();
  out.admission_waits = m.admission_waits.load();
  out.discards = m.discards.load();
  return out;
}

PageResidency MemoryManager::residency(PageId page) const {
  STRATA_CHECK(page < impl_->opt.num_pages) << "page " << page << " out of range";
  PageState& s = impl_->pages[page];
  std::lock_guard lock(s.mu);
  PageResidency r;
  r.valid[0] = s.valid[kDev];
  r.valid[1] = s.valid[kHostT];
  r.valid[2] = s.nvme_valid;
  r.nvme_staged = Impl::host_staged(s);
  r.readers = s.readers;
  r.writer = s.writer;
  r.busy = s.busy;
  return r;
}

std::string MemoryManager::stall_report() const { return impl_->stall_report_impl(); }

}  // namespace strata::memory
