// `strata bench pages`: the memory manager's page moves against the raw rates of the same
// machine, measured side by side in one run, and bytes moved under Belady vs LRU.
//
//   h2d_ratio / d2h_ratio    page moves through the manager (sim device copy streams) vs
//                            memcpy of the same bytes between the same host and device frames,
//                            page by page, on one thread
//   nvme_write_ratio         flush + one commit of every page (PageStore: writes, fdatasync,
//                            RocksDB batch) vs the IoEngine writing the same bytes to a raw
//                            O_DIRECT file at the same queue depth and request size + fdatasync
//   nvme_read_ratio          acquiring every page on the host from NVMe (checksummed reads) vs
//                            the IoEngine reading the same bytes from the raw file
//   belady_vs_lru_ratio      bytes moved by Belady / by LRU on the synthetic training trace
// Each rate is the best of --reps. One JSON object on stdout; logs on stderr.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device/device.h"
#include "core/util/log.h"
#include "core/util/sizes.h"
#include "memory/memory_manager.h"
#include "memory/page_store_tier.h"
#include "memory/training_trace.h"
#include "storage/aligned_buffer.h"
#include "storage/io_engine.h"
#include "storage/page_store.h"
#include "storage/posix_file.h"
#include "tools/bench_dir.h"
#include "tools/command.h"

namespace strata::tools {
namespace {

using memory::Access;
using memory::MemoryManager;
using memory::PageId;
using memory::PageRef;
using memory::Tier;

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The PageStore used directly (no manager), on page ids after the manager's: every page
// written as one batch and committed, or every page read at once. Returns seconds.
Result<double> StoreDirect(storage::PageStore& store, uint64_t pages, char* buffer,
                           storage::IoOp op, uint64_t version) {
  const uint64_t page = store.page_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  if (op == storage::IoOp::kWrite) {
    storage::PageStore::Batch batch = store.new_batch();
    for (uint64_t p = 0; p < pages; ++p) {
      STRATA_RETURN_IF_ERROR(
          store.write_page_version(batch, pages + p, version, buffer + p * page, page));
    }
    STRATA_RETURN_IF_ERROR(store.commit(batch));
  } else {
    std::vector<std::future<Status>> done;
    for (uint64_t p = 0; p < pages; ++p) {
      done.push_back(store.read_page(pages + p, buffer + p * page, page));
    }
    for (auto& f : done) STRATA_RETURN_IF_ERROR(f.get());
  }
  return Seconds(t0);
}

struct Flags {
  std::string page_size = "16M";
  int pages = 32;
  int reps = 5;
  std::string dir = ".";
  double link_gbps = 0.0;
  int trace_blocks = 8;
  bool json = true;
};

// Acquires every page on `tier` at once and waits for all; returns the seconds taken.
Result<double> AcquireAll(MemoryManager& mm, uint64_t pages, Tier tier, Access access) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<Result<PageRef>>> futures;
  for (PageId p = 0; p < pages; ++p) futures.push_back(mm.acquire(p, tier, access));
  std::vector<PageRef> refs;
  for (auto& f : futures) {
    Result<PageRef> r = f.get();
    if (!r.ok()) return r.status();
    refs.push_back(std::move(*r));
  }
  return Seconds(t0);
}

// Raw IoEngine transfers of `pages` pages between `buffer` and a preallocated O_DIRECT file.
class RawIo {
 public:
  static Result<std::unique_ptr<RawIo>> Create(const std::string& dir, uint64_t page,
                                               uint64_t pages, void* buffer) {
    auto raw = std::unique_ptr<RawIo>(new RawIo());
    raw->page_ = page;
    raw->pages_ = pages;
    raw->buffer_ = static_cast<char*>(buffer);
    const std::string path = dir + "/raw.bin";
    raw->fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644));
    if (!raw->fd_.valid()) return Status::FromErrno(errno, "open " + path + " O_DIRECT");
    if (int err = ::posix_fallocate(raw->fd_.get(), 0, off_t(page * pages)); err != 0) {
      return Status::FromErrno(err, "fallocate " + path);
    }
    STRATA_ASSIGN_OR_RETURN(raw->engine_, storage::IoEngine::Create(storage::IoEngineOptions{}));
    STRATA_ASSIGN_OR_RETURN(raw->file_, raw->engine_->register_file(raw->fd_.get(), path));
    STRATA_RETURN_IF_ERROR(raw->engine_->register_buffer(buffer, page * pages));
    return raw;
  }
  ~RawIo() {
    if (engine_) {
      engine_->unregister_buffer(buffer_);
      if (file_ >= 0) engine_->unregister_file(file_);
    }
  }
  // Moves every page (all submitted at once), then fdatasync for writes; returns seconds.
  Result<double> run(storage::IoOp op) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::future<Status>> done;
    for (uint64_t p = 0; p < pages_; ++p) {
      done.push_back(op == storage::IoOp::kWrite
                         ? engine_->write(file_, p * page_, buffer_ + p * page_, page_)
                         : engine_->read(file_, p * page_, buffer_ + p * page_, page_));
    }
    for (auto& f : done) STRATA_RETURN_IF_ERROR(f.get());
    if (op == storage::IoOp::kWrite) STRATA_RETURN_IF_ERROR(engine_->sync_file(file_));
    return Seconds(t0);
  }
  storage::IoEngine& engine() { return *engine_; }

 private:
  RawIo() = default;
  uint64_t page_ = 0, pages_ = 0;
  char* buffer_ = nullptr;
  storage::UniqueFd fd_;
  std::unique_ptr<storage::IoEngine> engine_;
  int file_ = -1;
};

Result<uint64_t> RunTrace(const BenchDir& dir, const std::string& name,
                          memory::EvictionPolicy policy, int blocks) {
  constexpr uint64_t kTracePage = 1 * kMiB;
  const uint64_t num_pages = 4 * uint64_t(blocks);
  const uint64_t device_pages = std::max<uint64_t>(2, num_pages / 8);
  const uint64_t host_pages = std::max<uint64_t>(4, num_pages / 4);
  storage::PageStoreOptions so;
  so.dirs = {dir.sub(name)};
  so.page_bytes = kTracePage;
  so.capacity_bytes = 3 * num_pages * kTracePage;
  STRATA_ASSIGN_OR_RETURN(auto store, storage::PageStore::Open(so));
  STRATA_ASSIGN_OR_RETURN(auto device,
                          CreateSimDevice({.capacity_bytes = device_pages * kTracePage}));
  memory::PageStoreTier tier(store.get());
  memory::MemoryManagerOptions o;
  o.page_bytes = kTracePage;
  o.num_pages = num_pages;
  o.budgets.device_bytes = device_pages * kTracePage;
  o.budgets.host_bytes = host_pages * kTracePage;
  o.device = device.get();
  o.nvme = &tier;
  o.policy = policy;
  STRATA_ASSIGN_OR_RETURN(auto mm, MemoryManager::Create(o));
  const auto trace = memory::SyntheticTrainingStep(blocks);
  if (policy == memory::EvictionPolicy::kBelady) mm->set_access_plan(memory::PlanOf(trace));
  for (int step = 0; step < 3; ++step) {
    for (const memory::TraceAccess& a : trace) {
      STRATA_ASSIGN_OR_RETURN(PageRef ref, mm->acquire_sync(a.page, a.tier, a.access));
    }
  }
  return mm->stats().moved_bytes();
}

Status RunBenchPages(const Flags& f) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t page, ParseBytes(f.page_size, "--page-size"));
  if (f.pages <= 0 || f.reps <= 0 || f.trace_blocks <= 0) {
    return Status::InvalidArgument("--pages, --reps and --trace-blocks must be positive");
  }
  const uint64_t pages = uint64_t(f.pages);
  const uint64_t bytes = page * pages;
  STRATA_RETURN_IF_ERROR(storage::CheckWritableDir(f.dir, "--dir"));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BenchDir> scratch, BenchDir::Create(f.dir, "pages", "--dir"));
  const BenchDir& dir = *scratch;

  STRATA_ASSIGN_OR_RETURN(auto device,
                          CreateSimDevice({.capacity_bytes = bytes, .link_gbps = f.link_gbps}));
  storage::PageStoreOptions so;
  so.dirs = {dir.sub("store")};
  so.page_bytes = page;
  // Committed + staged versions of the manager's pages, and of as many pages written directly.
  so.capacity_bytes = 5 * bytes;
  STRATA_ASSIGN_OR_RETURN(auto store, storage::PageStore::Open(so));
  memory::PageStoreTier tier(store.get());
  memory::MemoryManagerOptions o;
  o.page_bytes = page;
  o.num_pages = pages;
  o.budgets.device_bytes = bytes;
  o.budgets.host_bytes = bytes;
  o.device = device.get();
  o.nvme = &tier;
  STRATA_ASSIGN_OR_RETURN(auto mm, MemoryManager::Create(o));

  // The raw I/O baseline's buffer (as many bytes as the pages).
  STRATA_ASSIGN_OR_RETURN(storage::AlignedBuffer src, storage::AlignedBuffer::Allocate(bytes));
  std::memset(src.data(), 0x5a, bytes);
  STRATA_ASSIGN_OR_RETURN(auto raw, RawIo::Create(dir.path(), page, pages, src.data()));

  for (PageId p = 0; p < pages; ++p) {
    STRATA_ASSIGN_OR_RETURN(PageRef ref, mm->acquire_sync(p, Tier::kHost, Access::kOverwrite));
    std::memset(ref.data(), int(p & 0xff), page);
  }

  double h2d_memcpy_s = 1e30, d2h_memcpy_s = 1e30, h2d_s = 1e30, d2h_s = 1e30;
  double nvme_w_flush_s = 0, store_w_s = 1e30, store_r_s = 1e30;
  double nvme_w_s = 1e30, nvme_r_s = 1e30, raw_w_s = 1e30, raw_r_s = 1e30;
  for (int rep = 0; rep < f.reps + 1; ++rep) {  // rep 0 warms arenas, files and threads
    const bool timed = rep > 0;
    STRATA_RETURN_IF_ERROR(mm->evict_all(Tier::kDevice));  // host copies are valid: clean drops
    STRATA_ASSIGN_OR_RETURN(double s, AcquireAll(*mm, pages, Tier::kDevice, Access::kRead));
    if (timed) h2d_s = std::min(h2d_s, s);
    {
      // The memcpy baseline: the same bytes between the very same host and device frames
      // (both copies are pinned for read and hold identical bytes, so copying one onto the other
      // changes nothing). The sim device's arena is host memory, so the host may touch it.
      std::vector<PageRef> host_refs, dev_refs;
      for (PageId p = 0; p < pages; ++p) {
        STRATA_ASSIGN_OR_RETURN(PageRef h, mm->acquire_sync(p, Tier::kHost, Access::kRead));
        STRATA_ASSIGN_OR_RETURN(PageRef d, mm->acquire_sync(p, Tier::kDevice, Access::kRead));
        host_refs.push_back(std::move(h));
        dev_refs.push_back(std::move(d));
      }
      auto t0 = std::chrono::steady_clock::now();
      for (uint64_t p = 0; p < pages; ++p)
        std::memcpy(dev_refs[p].data(), host_refs[p].data(), page);
      if (timed) h2d_memcpy_s = std::min(h2d_memcpy_s, Seconds(t0));
      t0 = std::chrono::steady_clock::now();
      for (uint64_t p = 0; p < pages; ++p)
        std::memcpy(host_refs[p].data(), dev_refs[p].data(), page);
      if (timed) d2h_memcpy_s = std::min(d2h_memcpy_s, Seconds(t0));
    }
    // A write on the device (no move: the copy is there) makes the host copies stale.
    STRATA_ASSIGN_OR_RETURN(s, AcquireAll(*mm, pages, Tier::kDevice, Access::kWrite));
    STRATA_ASSIGN_OR_RETURN(s, AcquireAll(*mm, pages, Tier::kHost, Access::kRead));
    if (timed) d2h_s = std::min(d2h_s, s);

    // A write on the host makes the NVMe copies stale; then flush + one commit.
    STRATA_ASSIGN_OR_RETURN(s, AcquireAll(*mm, pages, Tier::kHost, Access::kWrite));
    auto t0 = std::chrono::steady_clock::now();
    STRATA_RETURN_IF_ERROR(mm->flush_all());
    const double flush_s = Seconds(t0);
    STRATA_RETURN_IF_ERROR(mm->commit_nvme());
    if (timed && Seconds(t0) < nvme_w_s) {
      nvme_w_s = Seconds(t0);
      nvme_w_flush_s = flush_s;
    }
    STRATA_ASSIGN_OR_RETURN(s, raw->run(storage::IoOp::kWrite));
    if (timed) raw_w_s = std::min(raw_w_s, s);
    STRATA_ASSIGN_OR_RETURN(
        s, StoreDirect(*store, pages, src.data(), storage::IoOp::kWrite, uint64_t(rep) + 1));
    if (timed) store_w_s = std::min(store_w_s, s);

    STRATA_RETURN_IF_ERROR(mm->evict_all(Tier::kDevice));
    STRATA_RETURN_IF_ERROR(mm->evict_all(Tier::kHost));
    STRATA_ASSIGN_OR_RETURN(s, AcquireAll(*mm, pages, Tier::kHost, Access::kRead));
    if (timed) nvme_r_s = std::min(nvme_r_s, s);
    STRATA_ASSIGN_OR_RETURN(s, raw->run(storage::IoOp::kRead));
    if (timed) raw_r_s = std::min(raw_r_s, s);
    STRATA_ASSIGN_OR_RETURN(s, StoreDirect(*store, pages, src.data(), storage::IoOp::kRead, 0));
    if (timed) store_r_s = std::min(store_r_s, s);
  }
  // The hot path: acquire + release of a page already on the host (a hit), one thread.
  constexpr int kHitIters = 100000;
  auto th = std::chrono::steady_clock::now();
  for (int i = 0; i < kHitIters; ++i) {
    STRATA_ASSIGN_OR_RETURN(PageRef ref,
                            mm->acquire_sync(PageId(i) % pages, Tier::kHost, Access::kRead));
  }
  const double hit_ns = Seconds(th) / kHitIters * 1e9;
  const memory::MemoryStats stats = mm->stats();
  const std::string backend = storage::IoBackendName(raw->engine().backend());

  STRATA_ASSIGN_OR_RETURN(uint64_t belady,
                          RunTrace(dir, "belady", memory::EvictionPolicy::kBelady, f.trace_blocks));
  STRATA_ASSIGN_OR_RETURN(uint64_t lru,
                          RunTrace(dir, "lru", memory::EvictionPolicy::kLru, f.trace_blocks));

  auto rate = [&](double s) { return double(bytes) / s / 1e9; };
  nlohmann::ordered_json out;  // doubles print with round-trip precision, NaN as null
  out["bench"] = "pages";
  out["page_bytes"] = page;
  out["pages"] = pages;
  out["reps"] = f.reps;
  out["sim_link_gbps"] = f.link_gbps;
  out["io_backend"] = backend;
  out["h2d_ratio"] = h2d_memcpy_s / h2d_s;
  out["h2d_page_gbytes_per_s"] = rate(h2d_s);
  out["h2d_memcpy_gbytes_per_s"] = rate(h2d_memcpy_s);
  out["d2h_ratio"] = d2h_memcpy_s / d2h_s;
  out["d2h_page_gbytes_per_s"] = rate(d2h_s);
  out["d2h_memcpy_gbytes_per_s"] = rate(d2h_memcpy_s);
  out["nvme_write_ratio"] = raw_w_s / nvme_w_s;
  out["nvme_write_page_gbytes_per_s"] = rate(nvme_w_s);
  out["nvme_write_raw_gbytes_per_s"] = rate(raw_w_s);
  out["nvme_write_store_direct_gbytes_per_s"] = rate(store_w_s);
  out["nvme_read_store_direct_gbytes_per_s"] = rate(store_r_s);
  out["nvme_write_flush_seconds"] = nvme_w_flush_s;
  out["nvme_write_total_seconds"] = nvme_w_s;
  out["nvme_read_ratio"] = raw_r_s / nvme_r_s;
  out["nvme_read_page_gbytes_per_s"] = rate(nvme_r_s);
  out["nvme_read_raw_gbytes_per_s"] = rate(raw_r_s);
  out["belady_vs_lru_ratio"] = lru == 0 ? 1.0 : double(belady) / double(lru);
  out["belady_moved_bytes"] = belady;
  out["lru_moved_bytes"] = lru;
  out["acquire_hit_ns"] = hit_ns;
  const storage::IoEngineStats io = store->engine().stats();
  out["store_io_requests"] = io.requests;
  out["store_io_fixed_buffer_requests"] = io.fixed_buffer_requests;
  out["trace_blocks"] = f.trace_blocks;
  out["device_peak_bytes"] = stats.tiers[0].peak_bytes;
  out["host_peak_bytes"] = stats.tiers[1].peak_bytes;
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

void AddBenchPagesCommand(CLI::App& bench, CommandContext& ctx) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = bench.add_subcommand(
      "pages", "Memory manager page moves vs memcpy and the raw IoEngine; Belady vs LRU");
  cmd->add_option("--page-size", f->page_size, "Page size (power of two)")->capture_default_str();
  cmd->add_option("--pages", f->pages, "Pages moved per measurement")->capture_default_str();
  cmd->add_option("--reps", f->reps, "Timed repetitions (best is reported)")->capture_default_str();
  cmd->add_option("--dir", f->dir,
                  "Directory on the disk to measure (a scratch dir is made and "
                  "removed inside it)")
      ->capture_default_str();
  cmd->add_option("--sim-link-gbps", f->link_gbps, "Sim device link rate, GB/s (0 = memcpy)")
      ->capture_default_str();
  cmd->add_option("--trace-blocks", f->trace_blocks, "Blocks of the Belady/LRU trace")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "Print JSON (the only output format)");
  cmd->callback([f, &ctx] { ctx.status = RunBenchPages(*f); });
}

}  // namespace strata::tools
