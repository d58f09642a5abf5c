#include "memory/memory_manager.h"

#include <sstream>
#include <thread>

#include "core/device/device.h"
#include "core/util/sizes.h"
#include "memory/manager_state.h"
#include "memory/stall_report.h"

// Note [Locking]
// A page's state (memory/page_table.h) is guarded by that page's mutex; the host pool's free
// list, counters and resident set by the pool's mutex. Order: page -> pool; the pool mutex is
// never held while taking a page mutex, and at most one page mutex is held at a time. A page in
// a moving state (kLoading, kStaging) belongs to the one thread moving it, which reads and fills
// its frame without the lock; nobody else pins, evicts or moves it meanwhile. No mutex is held
// across a copy, an I/O, a commit or a wait for a frame: the NVMe tier's batch is sealed (no
// I/O) and committed with no lock held (memory/write_back.cc), so a hit, an NVMe read or a new
// staging proceeds while a commit's fdatasync runs (memory_manager_locking_test.cc shows it
// under injected disk latency).
//
// Note [No hold and wait]
// A request that waits for a frame holds no frame and no other page: its own page is kLoading,
// which no eviction needs. A frame is freed by a commit or a release, never by a request that
// waits itself. So every wait for a frame ends when callers release pins, whatever the budget
// (down to one page).
//
// Note [Progress and stalls]
// Waiters (for a page to stop moving or be unpinned, for a frame) sleep on a condition variable
// in slices of kWaitSlice and re-check; anything that could unblock them (release, frame
// returned, load done, commit) notifies the page's waiters and bumps the pool's progress. A
// waiter whose own wait lasts stall_timeout_ms fails with Timeout and the stall report.

namespace strata::memory {

using internal::Counters;
using internal::ManagerState;
using internal::PageEntry;
using internal::PageState;

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

// Write-behind holds at most 1/this of the host pool in staged frames (Note [Grouped write-back]).
constexpr uint64_t kBehindPoolFraction = 4;

const std::string& ThisThreadName() {
  thread_local const std::string name = [] {
    std::ostringstream os;
    os << "thread " << std::this_thread::get_id();
    return os.str();
  }();
  return name;
}

Status CheckOptions(const MemoryManagerOptions& o) {
  const uint64_t page = o.page_bytes;
  if (!IsValidPageSize(page)) {
    return Status::InvalidArgument("page size " + std::to_string(page) +
                                   " bytes is not a multiple of 4 KiB");
  }
  if (o.num_pages == 0) return Status::InvalidArgument("memory manager: the plan has no pages");
  if (o.nvme != nullptr && o.nvme->page_bytes() != page) {
    return Status::InvalidArgument("the NVMe store has " + FormatBytes(o.nvme->page_bytes()) +
                                   " pages but the page size is " + FormatBytes(page) +
                                   "; use the store's page size or a new store");
  }
  if (o.host_bytes < page) {
    return WithDetail(Status::ResourceExhausted("the host budget " + FormatBytes(o.host_bytes) +
                                                " is below one page (" + FormatBytes(page) + ")"),
                      BudgetShortfall{.tier = Tier::kHost,
                                      .need_bytes = page,
                                      .have_bytes = o.host_bytes,
                                      .what = "one page",
                                      .held_by = "",
                                      .or_lower = Relief::kSmallerPages});
  }
  if (o.write_back_batch_pages == 0) {
    return Status::InvalidArgument(
        "memory manager: write_back_batch_pages is 0; use 1 to commit every write-back alone");
  }
  return Status::Ok();
}

// Registers the host pool with the device and the NVMe tier, and adopts the tier's committed
// pages (a reopened store).
Status ConnectTiers(ManagerState& m) {
  const MemoryManagerOptions& o = m.opt;
  if (o.device != nullptr)
    STRATA_RETURN_IF_ERROR(o.device->register_host(m.pool->data(), m.pool->bytes()));
  if (o.nvme == nullptr) return Status::Ok();
  uint64_t known = 0;
  for (PageId p : o.nvme->committed_pages()) {
    if (p >= o.num_pages) continue;
    m.pages[p].state = PageState::kOnNvme;
    m.pages[p].nvme_current = true;
    ++known;
  }
  if (known > 0) m.log->info("memory: {} pages found on NVMe", known);
  return o.nvme->register_buffer(m.pool->data(), m.pool->bytes());
}

}  // namespace

// ---- PageRef ------------------------------------------------------------------------------

PageRef& PageRef::operator=(PageRef&& other) noexcept {
  if (this != &other) {
    release();
    manager_ = std::exchange(other.manager_, nullptr);
    page_ = other.page_;
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
  m->release(page_, access_);
}

// ---- MemoryManager ------------------------------------------------------------------------

Result<std::unique_ptr<MemoryManager>> MemoryManager::Create(const MemoryManagerOptions& o) {
  STRATA_RETURN_IF_ERROR(CheckOptions(o));
  const uint64_t frames = o.host_bytes / o.page_bytes;
  STRATA_ASSIGN_OR_RETURN(auto pool,
                          internal::HostFramePool::Create(frames, o.page_bytes, o.num_pages));
  auto m = std::make_unique<ManagerState>(o, std::move(pool));
  m->group_pages = std::max<uint64_t>(
      1, std::min(o.write_back_batch_pages, o.write_back_batch_bytes / o.page_bytes));
  m->behind_pages = std::max<uint64_t>(1, std::min(m->group_pages, frames / kBehindPoolFraction));
  STRATA_RETURN_IF_ERROR(ConnectTiers(*m));
  m->workers = std::make_unique<internal::WorkerPool>(o.max_workers);
  m->log->info("memory: {} pages of {}; host pool {} ({} pages), nvme {}, eviction {}", o.num_pages,
               FormatBytes(o.page_bytes), FormatBytes(m->pool->bytes()), frames,
               o.nvme != nullptr ? "on" : "off",
               o.policy == EvictionPolicy::kBelady ? "belady" : "lru");
  return std::unique_ptr<MemoryManager>(new MemoryManager(std::move(m)));
}

MemoryManager::MemoryManager(std::unique_ptr<ManagerState> state) : m_(std::move(state)) {}

MemoryManager::~MemoryManager() {
  ManagerState& m = *m_;
  m.workers.reset();  // runs what is queued (prefetches), joins
  // A staged write reads its buffer, a frame of the host pool, until it completes (the checksum
  // is taken on completion): wait for those writes before the pool is freed. What was staged and
  // not committed is dropped, as a crash would drop it.
  if (m.opt.nvme != nullptr) m.opt.nvme->drop_staged();
  for (PageId p = 0; p < m.pages.size(); ++p) {
    STRATA_CHECK(!m.pages[p].pinned())
        << "MemoryManager destroyed while page " << p << " is still pinned";
  }
  if (m.opt.nvme != nullptr) m.opt.nvme->unregister_buffer(m.pool->data());
  if (m.opt.device != nullptr) m.opt.device->unregister_host(m.pool->data()).ignore_error();
}

const MemoryManagerOptions& MemoryManager::options() const { return m_->opt; }
uint64_t MemoryManager::page_bytes() const { return m_->page_bytes; }
uint64_t MemoryManager::host_frames() const { return m_->pool->capacity_frames(); }

Status MemoryManager::check_page(PageId page, const char* what) const {
  if (page < m_->pages.size()) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + ": page " + std::to_string(page) +
                                 " does not exist (the plan has " +
                                 std::to_string(m_->pages.size()) + " pages)");
}

std::future<Result<PageRef>> MemoryManager::acquire(PageId page, Access access,
                                                    const AcquireOptions& options) {
  ManagerState& m = *m_;
  std::promise<Result<PageRef>> promise;
  std::future<Result<PageRef>> future = promise.get_future();
  Status st = check_page(page, "acquire");
  if (st.ok() && options.acquirer >= kMaxAcquirers) {
    st = Status::InvalidArgument("acquire: acquirer " + std::to_string(options.acquirer) +
                                 " is not below " + std::to_string(kMaxAcquirers));
  }
  if (!st.ok()) {
    promise.set_value(st);
    return future;
  }
  std::string holder = options.holder.empty() ? ThisThreadName() : options.holder;
  m.cursors.advance(page, options.acquirer);
  {
    PageEntry& e = m.pages[page];
    std::lock_guard lock(e.mu);
    if (e.can_pin(access)) {  // a hit: the page mutex only
      Counters::bump(m.counters.hits);
      e.pin(access, std::move(holder), m.counters.next_tick());
      promise.set_value(PageRef(this, page, access, e.frame));
      return future;
    }
  }
  auto shared = std::make_shared<std::promise<Result<PageRef>>>(std::move(promise));
  m.workers->submit([this, shared, page, access, holder = std::move(holder)] {
    Result<void*> frame = load_and_pin(page, access, holder, /*pin=*/true);
    if (!frame.ok()) {
      shared->set_value(frame.status());
    } else {
      shared->set_value(PageRef(this, page, access, *frame));
    }
  });
  return future;
}

Result<PageRef> MemoryManager::acquire_sync(PageId page, Access access,
                                            const AcquireOptions& options) {
  return acquire(page, access, options).get();
}

void MemoryManager::prefetch(PageId page) {
  ManagerState& m = *m_;
  if (!check_page(page, "prefetch").ok()) return;
  {
    // Already there or on its way: nothing to do, and no worker needed.
    PageEntry& e = m.pages[page];
    std::lock_guard lock(e.mu);
    if (e.resident() || e.moving()) return;
  }
  {
    std::lock_guard lock(m.prefetch_mu);
    ++m.prefetches;
  }
  m.workers->submit([this, page] {
    ManagerState& ms = *m_;
    Result<void*> r = load_and_pin(page, Access::kRead, "", /*pin=*/false);
    if (!r.ok()) ms.log->debug("prefetch of page {} failed: {}", page, r.status().to_string());
    {
      std::lock_guard lock(ms.prefetch_mu);
      --ms.prefetches;
    }
    ms.prefetch_cv.notify_all();
  });
}

void MemoryManager::drain_prefetches() {
  std::unique_lock lock(m_->prefetch_mu);
  m_->prefetch_cv.wait(lock, [&] { return m_->prefetches == 0; });
}

Status MemoryManager::demote(PageId page) {
  STRATA_RETURN_IF_ERROR(check_page(page, "demote"));
  // 0 is older than every tick (ticks start at 1); a later release stamps a new tick again.
  m_->pages[page].last_use.store(0, std::memory_order_relaxed);
  return Status::Ok();
}

void MemoryManager::release(PageId page, Access access) {
  ManagerState& m = *m_;
  PageEntry& e = m.pages[page];
  {
    std::lock_guard lock(e.mu);
    e.unpin(access, m.counters.next_tick());
    e.cv.notify_all();
  }
  m.pool->wake();
}

Status MemoryManager::commit_nvme() { return m_->write_back.commit(/*forced=*/false); }

void MemoryManager::set_access_plan(std::vector<PlannedAccess> plan) {
  m_->cursors.set_plan(std::move(plan));
}

void MemoryManager::set_plan_position(uint64_t position) { m_->cursors.set_position(position); }

MemoryStats MemoryManager::stats() const {
  ManagerState& m = *m_;
  MemoryStats out;
  TierStats& host = out.tiers[static_cast<int>(Tier::kHost)];
  TierStats& nvme = out.tiers[static_cast<int>(Tier::kNvme)];
  host = m.pool->stats();
  for (PageId p = 0; p < m.pages.size(); ++p) {
    PageEntry& e = m.pages[p];
    std::lock_guard lock(e.mu);
    host.pinned_pages += e.holders.size();
    if (e.nvme_current || e.state == PageState::kStaged) ++nvme.resident_pages;
  }
  if (m.opt.nvme != nullptr) {
    const NvmeTierStats ns = m.opt.nvme->stats();
    nvme.capacity_bytes = ns.capacity_bytes;
    nvme.current_bytes = ns.used_bytes;
    nvme.peak_bytes = ns.peak_bytes;
  }
  m.counters.fill(out);
  return out;
}

PageResidency MemoryManager::residency(PageId page) const {
  STRATA_CHECK(page < m_->pages.size()) << "page " << page << " out of range";
  PageEntry& e = m_->pages[page];
  std::lock_guard lock(e.mu);
  PageResidency r;
  r.valid[static_cast<int>(Tier::kHost)] = e.resident();
  r.valid[static_cast<int>(Tier::kNvme)] = e.nvme_current;
  r.nvme_staged = e.state == PageState::kStaged;
  r.readers = e.readers;
  r.writer = e.writer;
  r.busy = e.moving();
  r.state = internal::PageStateName(e.state);
  return r;
}

std::string MemoryManager::stall_report() const { return internal::StallReport(*m_); }

}  // namespace strata::memory
