// `strata bench pages`: the memory manager's page moves against the raw rates of the same
// machine, measured side by side in one run, and bytes moved under Belady vs LRU.
//
//   h2d_ratio / d2h_ratio    page copies as the scheduler makes them (host pool pages pinned by
//                            the manager, Device::copy_async into and out of a device buffer on
//                            one stream) vs memcpy of the same bytes between the same buffers,
//                            page by page, on one thread
//   nvme_write_ratio         flush + one commit of every page (PageStore: writes, fdatasync,
//                            RocksDB batch) vs the IoEngine writing the same bytes to a raw
//                            O_DIRECT file at the same queue depth and request size + fdatasync
//   nvme_read_ratio          acquiring every page on the host from NVMe (checksummed reads) vs
//                            the IoEngine reading the same bytes from the raw file
//   belady_vs_lru_ratio      NVMe bytes moved by Belady (a cursor per acquirer) / by LRU on the
//                            synthetic training trace through a small host pool
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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_commands.h"
#include "bench/bench_dir.h"
#include "bench/raw_io.h"
#include "core/device/device.h"
#include "core/util/log.h"
#include "core/util/sizes.h"
#include "memory/memory_manager.h"
#include "memory/open_nvme_tier.h"
#include "memory/page_plan.h"
#include "memory/page_store_nvme_tier.h"
#include "memory/training_trace.h"
#include "storage/aligned_buffer.h"
#include "storage/io_engine.h"
#include "storage/page_store.h"
#include "storage/posix_file.h"

namespace strata::bench {
namespace {

using memory::Access;
using memory::MemoryManager;
using memory::PageId;
using memory::PageRef;

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

// Acquires every page at once and waits for all; returns the seconds taken.
Result<double> AcquireAll(MemoryManager& mm, uint64_t pages, Access access) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<Result<PageRef>>> futures;
  for (PageId p = 0; p < pages; ++p) futures.push_back(mm.acquire(p, access));
  std::vector<PageRef> refs;
  for (auto& f : futures) {
    Result<PageRef> r = f.get();
    if (!r.ok()) return r.status();
    refs.push_back(std::move(*r));
  }
  return Seconds(t0);
}

Result<uint64_t> RunTrace(const BenchDir& dir, const std::string& name,
                          memory::EvictionPolicy policy, int blocks) {
  constexpr uint64_t kTracePage = 1 * kMiB;
  const uint64_t num_pages = 4 * uint64_t(blocks);
  const uint64_t host_pages = std::max<uint64_t>(4, num_pages / 4);
  memory::NvmeTierOptions so;
  so.dirs = {dir.sub(name)};
  so.page_bytes = kTracePage;
  so.capacity_bytes = 3 * num_pages * kTracePage;
  STRATA_ASSIGN_OR_RETURN(auto tier, memory::OpenNvmeTier(so));
  memory::MemoryManagerOptions o;
  o.page_bytes = kTracePage;
  o.num_pages = num_pages;
  o.host_bytes = host_pages * kTracePage;
  o.nvme = tier.get();
  o.policy = policy;
  STRATA_ASSIGN_OR_RETURN(auto mm, MemoryManager::Create(o));
  const auto trace = memory::SyntheticTrainingStep(blocks);
  if (policy == memory::EvictionPolicy::kBelady) mm->set_access_plan(memory::PlanOf(trace));
  for (int step = 0; step < 3; ++step) {
    for (const memory::TraceAccess& a : trace) {
      STRATA_ASSIGN_OR_RETURN(
          PageRef ref, mm->acquire_sync(a.page, a.access, {.holder = {}, .acquirer = a.acquirer}));
    }
  }
  return mm->stats().moved_bytes();
}

// Page copies as the scheduler makes them (Engine::upload_page, the gradient copies down):
// Device::copy_async of every pinned host page into (or out of) a device buffer on one stream,
// then a synchronize; against memcpy of the same bytes between the same buffers.
struct CopyTimes {
  double h2d_s = 1e30, d2h_s = 1e30, h2d_memcpy_s = 1e30, d2h_memcpy_s = 1e30;
};

Status TimeDeviceCopies(MemoryManager& mm, Device& device, uint64_t pages, CopyTimes* best) {
  const uint64_t page = mm.page_bytes();
  STRATA_ASSIGN_OR_RETURN(void* dev, device.alloc(page * pages));
  char* d = static_cast<char*>(dev);
  auto stream = device.create_stream("bench pages");
  std::vector<PageRef> refs;
  for (PageId p = 0; p < pages; ++p) {
    STRATA_ASSIGN_OR_RETURN(PageRef h, mm.acquire_sync(p, Access::kRead));
    refs.push_back(std::move(h));
  }
  Status st;
  for (const CopyKind kind : {CopyKind::kHostToDevice, CopyKind::kDeviceToHost}) {
    const bool h2d = kind == CopyKind::kHostToDevice;
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t p = 0; p < pages && st.ok(); ++p) {
      char* host = static_cast<char*>(refs[p].data());
      st = h2d ? device.copy_async(d + p * page, host, page, kind, *stream)
               : device.copy_async(host, d + p * page, page, kind, *stream);
    }
    if (st.ok()) st = stream->synchronize();
    double& moved = h2d ? best->h2d_s : best->d2h_s;
    moved = std::min(moved, Seconds(t0));
    // The sim device's arena is host memory, so the host may touch it for the baseline; both
    // sides hold the same bytes, so copying one onto the other changes nothing.
    t0 = std::chrono::steady_clock::now();
    for (uint64_t p = 0; p < pages; ++p) {
      char* host = static_cast<char*>(refs[p].data());
      if (h2d) {
        std::memcpy(d + p * page, host, page);
      } else {
        std::memcpy(host, d + p * page, page);
      }
    }
    double& memcpy_s = h2d ? best->h2d_memcpy_s : best->d2h_memcpy_s;
    memcpy_s = std::min(memcpy_s, Seconds(t0));
  }
  stream.reset();
  device.free(dev);
  return st;
}

struct NvmeTimes {
  double write_flush_s = 0, write_s = 1e30, read_s = 1e30;
  double raw_write_s = 1e30, raw_read_s = 1e30, store_write_s = 1e30, store_read_s = 1e30;
};

// One repetition of the NVMe measurements: a host write of every page, flush + one commit, the
// same bytes through the raw engine and the store directly; then every page read back.
Status TimeNvme(MemoryManager& mm, storage::PageStore& store, RawIo& raw, char* src, uint64_t pages,
                int rep, NvmeTimes* best) {
  STRATA_ASSIGN_OR_RETURN(double s, AcquireAll(mm, pages, Access::kWrite));
  auto t0 = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(mm.flush_all());
  const double flush_s = Seconds(t0);
  STRATA_RETURN_IF_ERROR(mm.commit_nvme());
  if (Seconds(t0) < best->write_s) {
    best->write_s = Seconds(t0);
    best->write_flush_s = flush_s;
  }
  STRATA_ASSIGN_OR_RETURN(s, raw.run(storage::IoOp::kWrite));
  best->raw_write_s = std::min(best->raw_write_s, s);
  STRATA_ASSIGN_OR_RETURN(s,
                          StoreDirect(store, pages, src, storage::IoOp::kWrite, uint64_t(rep) + 1));
  best->store_write_s = std::min(best->store_write_s, s);
  STRATA_RETURN_IF_ERROR(mm.evict_all());
  STRATA_ASSIGN_OR_RETURN(s, AcquireAll(mm, pages, Access::kRead));
  best->read_s = std::min(best->read_s, s);
  STRATA_ASSIGN_OR_RETURN(s, raw.run(storage::IoOp::kRead));
  best->raw_read_s = std::min(best->raw_read_s, s);
  STRATA_ASSIGN_OR_RETURN(s, StoreDirect(store, pages, src, storage::IoOp::kRead, 0));
  best->store_read_s = std::min(best->store_read_s, s);
  return Status::Ok();
}

// The hot path: acquire + release of a page already in the pool (a hit), one thread.
Result<double> TimeHitNs(MemoryManager& mm, uint64_t pages) {
  constexpr int kHitIters = 100000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kHitIters; ++i) {
    STRATA_ASSIGN_OR_RETURN(PageRef ref, mm.acquire_sync(PageId(i) % pages, Access::kRead));
  }
  return Seconds(t0) / kHitIters * 1e9;
}

void AddRatios(nlohmann::ordered_json& out, uint64_t bytes, const CopyTimes& c,
               const NvmeTimes& n) {
  auto rate = [&](double s) { return double(bytes) / s / 1e9; };
  out["h2d_ratio"] = c.h2d_memcpy_s / c.h2d_s;
  out["h2d_page_gbytes_per_s"] = rate(c.h2d_s);
  out["h2d_memcpy_gbytes_per_s"] = rate(c.h2d_memcpy_s);
  out["d2h_ratio"] = c.d2h_memcpy_s / c.d2h_s;
  out["d2h_page_gbytes_per_s"] = rate(c.d2h_s);
  out["d2h_memcpy_gbytes_per_s"] = rate(c.d2h_memcpy_s);
  out["nvme_write_ratio"] = n.raw_write_s / n.write_s;
  out["nvme_write_page_gbytes_per_s"] = rate(n.write_s);
  out["nvme_write_raw_gbytes_per_s"] = rate(n.raw_write_s);
  out["nvme_write_store_direct_gbytes_per_s"] = rate(n.store_write_s);
  out["nvme_read_store_direct_gbytes_per_s"] = rate(n.store_read_s);
  out["nvme_write_flush_seconds"] = n.write_flush_s;
  out["nvme_write_total_seconds"] = n.write_s;
  out["nvme_read_ratio"] = n.raw_read_s / n.read_s;
  out["nvme_read_page_gbytes_per_s"] = rate(n.read_s);
  out["nvme_read_raw_gbytes_per_s"] = rate(n.raw_read_s);
}

// Everything one run measures, opened in `dir`: the sim device, a PageStore with its tier, a
// memory manager over both holding every page on the host, and the raw I/O baseline over a
// buffer of as many bytes as the pages. Members are destroyed in reverse order: users first.
struct PagesRig {
  std::unique_ptr<Device> device;
  std::unique_ptr<storage::PageStore> store;
  std::unique_ptr<memory::PageStoreNvmeTier> tier;
  std::unique_ptr<MemoryManager> mm;
  storage::AlignedBuffer src;
  std::unique_ptr<RawIo> raw;
};

Result<std::unique_ptr<PagesRig>> OpenRig(const BenchDir& dir, uint64_t page, uint64_t pages,
                                          double link_gbps) {
  const uint64_t bytes = page * pages;
  auto rig = std::make_unique<PagesRig>();
  STRATA_ASSIGN_OR_RETURN(rig->device,
                          CreateSimDevice({.capacity_bytes = bytes, .link_gbps = link_gbps}));
  storage::PageStoreOptions so;
  so.dirs = {dir.sub("store")};
  so.page_bytes = page;
  // Committed + staged versions of the manager's pages, and of as many pages written directly.
  so.capacity_bytes = 5 * bytes;
  STRATA_ASSIGN_OR_RETURN(rig->store, storage::PageStore::Open(so));
  rig->tier = std::make_unique<memory::PageStoreNvmeTier>(rig->store.get());
  STRATA_ASSIGN_OR_RETURN(rig->mm, MemoryManager::Create({.page_bytes = page,
                                                          .num_pages = pages,
                                                          .host_bytes = bytes,
                                                          .device = rig->device.get(),
                                                          .nvme = rig->tier.get()}));
  STRATA_ASSIGN_OR_RETURN(rig->src, storage::AlignedBuffer::Allocate(bytes));
  // Registered (by RawIo) before it is written: the pin faults its pages in.
  STRATA_ASSIGN_OR_RETURN(rig->raw, RawIo::Create(dir.path(), page, pages, rig->src.data()));
  std::memset(rig->src.data(), 0x5a, bytes);
  for (PageId p = 0; p < pages; ++p) {
    STRATA_ASSIGN_OR_RETURN(PageRef ref, rig->mm->acquire_sync(p, Access::kOverwrite));
    std::memset(ref.data(), int(p & 0xff), page);
  }
  return rig;
}

// The best of `reps` timed repetitions of the copies and the NVMe moves, after one untimed.
Status MeasureMoves(PagesRig& rig, uint64_t pages, int reps, CopyTimes* copies,
                    NvmeTimes* nvme) {
  CopyTimes warm_copies;
  NvmeTimes warm_nvme;
  for (int rep = 0; rep < reps + 1; ++rep) {  // rep 0 warms arenas, files and threads
    STRATA_RETURN_IF_ERROR(
        TimeDeviceCopies(*rig.mm, *rig.device, pages, rep > 0 ? copies : &warm_copies));
    STRATA_RETURN_IF_ERROR(TimeNvme(*rig.mm, *rig.store, *rig.raw, rig.src.data(), pages, rep,
                                    rep > 0 ? nvme : &warm_nvme));
  }
  return Status::Ok();
}

Status RunBenchPages(const Flags& f) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t page, ParseBytes(f.page_size, "--page-size"));
  if (!memory::IsValidPageSize(page)) {
    return Status::InvalidArgument("--page-size " + f.page_size +
                                   " must be a multiple of 4K (e.g. 64K, 16M)");
  }
  if (f.pages <= 0 || f.reps <= 0 || f.trace_blocks <= 0) {
    return Status::InvalidArgument("--pages, --reps and --trace-blocks must be positive");
  }
  const uint64_t pages = uint64_t(f.pages);
  STRATA_RETURN_IF_ERROR(storage::CheckWritableDir(f.dir, "--dir"));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BenchDir> scratch,
                          BenchDir::Create(f.dir, "pages", "--dir"));
  const BenchDir& dir = *scratch;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<PagesRig> rig, OpenRig(dir, page, pages, f.link_gbps));
  CopyTimes copies;
  NvmeTimes nvme;
  STRATA_RETURN_IF_ERROR(MeasureMoves(*rig, pages, f.reps, &copies, &nvme));
  STRATA_ASSIGN_OR_RETURN(const double hit_ns, TimeHitNs(*rig->mm, pages));
  const memory::MemoryStats stats = rig->mm->stats();
  STRATA_ASSIGN_OR_RETURN(uint64_t belady,
                          RunTrace(dir, "belady", memory::EvictionPolicy::kBelady, f.trace_blocks));
  STRATA_ASSIGN_OR_RETURN(uint64_t lru,
                          RunTrace(dir, "lru", memory::EvictionPolicy::kLru, f.trace_blocks));
  nlohmann::ordered_json out;  // doubles print with round-trip precision, NaN as null
  out["bench"] = "pages";
  out["page_bytes"] = page;
  out["pages"] = pages;
  out["reps"] = f.reps;
  out["sim_link_gbps"] = f.link_gbps;
  out["io_backend"] = storage::IoBackendName(rig->raw->engine().backend());
  AddRatios(out, page * pages, copies, nvme);
  out["belady_vs_lru_ratio"] = lru == 0 ? 1.0 : double(belady) / double(lru);
  out["belady_moved_bytes"] = belady;
  out["lru_moved_bytes"] = lru;
  out["acquire_hit_ns"] = hit_ns;
  const storage::IoEngineStats io = rig->store->engine().stats();
  out["store_io_requests"] = io.requests;
  out["store_io_fixed_buffer_requests"] = io.fixed_buffer_requests;
  out["trace_blocks"] = f.trace_blocks;
  out["device_peak_bytes"] = rig->device->stats().peak_bytes;
  out["host_peak_bytes"] = stats.tier(memory::Tier::kHost).peak_bytes;
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

void AddBenchPagesCommand(CLI::App& bench, Status& status) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = bench.add_subcommand(
      "pages",
      "Page copies vs memcpy, the memory manager's NVMe moves vs the raw IoEngine; Belady vs LRU");
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
  cmd->callback([f, &status] { status = RunBenchPages(*f); });
}

}  // namespace strata::bench
