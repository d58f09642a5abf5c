// `strata bench io`: IoEngine throughput per access pattern on one preallocated O_DIRECT file,
// and the latency of the NVMe store's commit (its synchronous RocksDB WriteBatch), as JSON lines
// on stdout. bench/io_vs_fio.sh runs fio with the same file size, block size and depth next to
// it and prints the ratios.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/sizes.h"
#include "storage/io_engine.h"
#include "storage/page_store.h"
#include "storage/physical_layout.h"
#include "storage/posix_file.h"
#include "bench/bench_commands.h"

namespace strata::bench {
namespace {

using storage::AlignedBuffer;
using storage::IoEngine;
using storage::IoOp;
using storage::IoRequest;

struct BenchIoFlags {
  std::string dir;
  std::string size = "4G";
  std::string block = "1M";
  uint32_t depth = 16;
  std::string rw = "write,read,randwrite,randread";
  std::string backend = "auto";
  uint32_t commits = 200;
  uint32_t commit_pages = 8;
  bool json = false;
  bool keep = false;
  bool no_layout = false;
  bool huge_pages = true;
};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// State of one pattern run, shared with the completion callbacks (which may still be
// returning when the waiting thread has seen the last completion).
struct PatternRun {
  IoEngine* engine;
  int file;
  char* buffers;
  uint64_t block;
  bool write;
  std::vector<uint64_t> order;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t finished = 0, issued = 0;
  Status first_error;
};

// Issues the next block of the pattern into buffer `slot`; each completion chains the next.
void IssueNext(const std::shared_ptr<PatternRun>& run, uint32_t slot) {
  uint64_t index;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    if (run->issued == run->order.size() || !run->first_error.ok()) return;
    index = run->order[run->issued++];
  }
  IoRequest r{run->write ? IoOp::kWrite : IoOp::kRead,
              run->file,
              index * run->block,
              run->buffers + slot * run->block,
              run->block,
              [run, slot](const Status& s) {
                bool wake;
                {
                  std::lock_guard<std::mutex> lock(run->mu);
                  ++run->finished;
                  if (!s.ok() && run->first_error.ok()) run->first_error = s;
                  wake = run->finished == run->order.size() || !run->first_error.ok();
                }
                // Only the end (or an error) wakes the waiting thread: a wake-up per transfer
                // would cost more than a 4 KiB transfer.
                if (wake) run->cv.notify_all();
                IssueNext(run, slot);
              }};
  Status s = run->engine->submit(std::span<IoRequest>(&r, 1));
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(run->mu);
    ++run->finished;
    if (run->first_error.ok()) run->first_error = s;
    run->cv.notify_all();
  }
}

// Runs one pattern over the whole file with `depth` transfers of `block` bytes in flight.
Result<double> RunPattern(IoEngine& engine, int file, AlignedBuffer& buffers, uint64_t size,
                          uint64_t block, uint32_t depth, bool write, bool random) {
  auto run = std::make_shared<PatternRun>();
  run->engine = &engine;
  run->file = file;
  run->buffers = buffers.data();
  run->block = block;
  run->write = write;
  run->order.resize(size / block);
  std::iota(run->order.begin(), run->order.end(), 0);
  if (random) std::shuffle(run->order.begin(), run->order.end(), std::mt19937_64(1));
  const uint64_t ops = run->order.size();
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t slot = 0; slot < depth && slot < ops; ++slot) IssueNext(run, slot);
  std::unique_lock<std::mutex> lock(run->mu);
  run->cv.wait(lock, [&] {
    return run->finished == run->issued && (run->issued == ops || !run->first_error.ok());
  });
  const double seconds = Seconds(std::chrono::steady_clock::now() - start);
  if (!run->first_error.ok()) return run->first_error;
  return seconds;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

void Emit(const nlohmann::json& j, bool json) {
  if (json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::ostringstream line;
    for (const auto& [k, v] : j.items()) line << k << "=" << v.dump() << " ";
    std::printf("%s\n", line.str().c_str());
  }
  std::fflush(stdout);
}

// Incompressible bytes (a fixed seed: runs write the same data).
void FillRandom(AlignedBuffer& buffer, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < buffer.size(); i += 8) {
    const uint64_t x = rng();
    std::memcpy(buffer.data() + i, &x, 8);
  }
}

// Commit latency: `commits` batches of `pages` pages of `block` bytes into a fresh PageStore.
Status RunCommitBench(const BenchIoFlags& f, uint64_t block, storage::IoBackend backend) {
  const std::string dir = f.dir + "/strata-bench-store-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  storage::PageStoreOptions o;
  o.dirs = {dir};
  o.page_bytes = block;
  o.capacity_bytes = (2 * uint64_t{f.commit_pages} + 4) * block;
  o.io.backend = backend;
  o.io.queue_depth = f.depth;
  o.io.request_bytes = std::min<uint64_t>(block, 1 * kMiB);
  STRATA_ASSIGN_OR_RETURN(auto store, storage::PageStore::Open(o));
  STRATA_ASSIGN_OR_RETURN(AlignedBuffer pages, AlignedBuffer::Allocate(f.commit_pages * block));
  // Registered before it is filled, so that the pin faults its pages in (AlignedBuffer's contract).
  (void)store->engine().register_buffer(pages.data(), pages.size()).ok();
  FillRandom(pages, 7);
  std::vector<double> catalog_us, total_us;
  for (uint32_t c = 1; c <= f.commits; ++c) {
    storage::PageStore::Batch batch = store->new_batch();
    for (uint32_t p = 0; p < f.commit_pages; ++p) {
      STRATA_RETURN_IF_ERROR(
          store->write_page_version(batch, p, c, pages.data() + p * block, block));
    }
    storage::CommitTiming t;
    STRATA_RETURN_IF_ERROR(store->commit(batch, &t));
    catalog_us.push_back(t.catalog_ns / 1e3);
    total_us.push_back(t.total_ns / 1e3);
  }
  store->engine().unregister_buffer(pages.data());
  nlohmann::json j;
  j["rw"] = "commit";
  j["commits"] = f.commits;
  j["pages_per_commit"] = f.commit_pages;
  j["page_bytes"] = block;
  j["catalog_p50_us"] = Percentile(catalog_us, 0.50);
  j["catalog_p99_us"] = Percentile(catalog_us, 0.99);
  j["commit_p50_us"] = Percentile(total_us, 0.50);
  j["commit_p99_us"] = Percentile(total_us, 0.99);
  Emit(j, f.json);
  return Status::Ok();
}

// Patterns in the order they run (writes first, so reads read written blocks).
const std::vector<std::string> kPatterns = {"write", "read", "randwrite", "randread"};

// What the flags ask for, checked.
struct IoRequestPlan {
  uint64_t size = 0;   // whole blocks
  uint64_t block = 0;
  storage::IoBackend backend = storage::IoBackend::kAuto;
  std::vector<std::string> patterns;  // from kPatterns, in its order
};

Result<storage::IoBackend> ParseBackend(const std::string& name) {
  if (name == "auto") return storage::IoBackend::kAuto;
  if (name == "io_uring") return storage::IoBackend::kUring;
  if (name == "sync") return storage::IoBackend::kSync;
  return Status::InvalidArgument("--backend " + name + ": use auto, io_uring or sync");
}

Result<std::vector<std::string>> ParsePatterns(const std::string& rw) {
  std::vector<bool> wanted(kPatterns.size(), false);
  std::stringstream list(rw);
  for (std::string item; std::getline(list, item, ',');) {
    auto it = std::find(kPatterns.begin(), kPatterns.end(), item);
    if (it == kPatterns.end()) {
      return Status::InvalidArgument("--rw " + item +
                                     ": use read, write, randread, randwrite or a comma list");
    }
    wanted[it - kPatterns.begin()] = true;
  }
  std::vector<std::string> patterns;
  for (size_t i = 0; i < kPatterns.size(); ++i) {
    if (wanted[i]) patterns.push_back(kPatterns[i]);
  }
  return patterns;
}

Result<IoRequestPlan> ParseFlags(const BenchIoFlags& f) {
  IoRequestPlan p;
  STRATA_ASSIGN_OR_RETURN(p.size, ParseBytes(f.size, "--size"));
  STRATA_ASSIGN_OR_RETURN(p.block, ParseBytes(f.block, "--block"));
  if (p.block == 0 || !storage::IsIoAligned(p.block)) {
    return Status::InvalidArgument("--block " + f.block + " is not a positive multiple of 4 KiB");
  }
  if (p.size < p.block) {
    return Status::InvalidArgument("--size " + f.size + " is smaller than --block " + f.block);
  }
  p.size = p.size / p.block * p.block;
  if (f.depth == 0 || f.depth > 4096) {
    return Status::InvalidArgument("--depth " + std::to_string(f.depth) + " is out of 1..4096");
  }
  STRATA_ASSIGN_OR_RETURN(p.backend, ParseBackend(f.backend));
  STRATA_ASSIGN_OR_RETURN(p.patterns, ParsePatterns(f.rw));
  return p;
}

// `size` bytes allocated to `fd`; the error names --dir and its free space.
Status Preallocate(const storage::UniqueFd& fd, uint64_t size, const std::string& dir) {
  if (int r = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(size)); r != 0) {
    Result<uint64_t> free_bytes = storage::FreeBytes(dir);
    return Status::FromErrno(
        r, "--dir " + dir + ": preallocate " + FormatBytes(size) +
               " (free: " + (free_bytes.ok() ? FormatBytes(*free_bytes) : "?") + ")");
  }
  return Status::Ok();
}

// Runs every pattern of `p` over the registered `file`, one JSON object each.
// `segments_per_mib`: the buffer's physical layout (storage/physical_layout.h), or < 0 unknown.
Status RunPatterns(const BenchIoFlags& f, const IoRequestPlan& p, IoEngine& engine, int file,
                   AlignedBuffer& buffers, const std::string& path, double segments_per_mib) {
  bool written = f.no_layout;
  for (const std::string& pattern : p.patterns) {
    const bool write = pattern.find("write") != std::string::npos;
    const bool random = pattern.rfind("rand", 0) == 0;
    if (!write && !written) {
      // Reads of never-written (unwritten-extent) blocks skip the disk: lay the file out first.
      Logger("storage")->info("bench io: laying out {} of {} before reading", FormatBytes(p.size),
                              path);
      STRATA_ASSIGN_OR_RETURN(
          double ignored, RunPattern(engine, file, buffers, p.size, p.block, f.depth, true, false));
      (void)ignored;
    }
    written = written || write;
    STRATA_ASSIGN_OR_RETURN(
        double seconds, RunPattern(engine, file, buffers, p.size, p.block, f.depth, write, random));
    nlohmann::json j;
    j["rw"] = pattern;
    j["bytes"] = p.size;
    j["block"] = p.block;
    j["depth"] = f.depth;
    j["backend"] = storage::IoBackendName(engine.backend());
    j["seconds"] = seconds;
    j["bytes_per_s"] = static_cast<double>(p.size) / seconds;
    // With 4 KiB pages the rate follows this (Note [4 KiB-page reads on virtio-blk]).
    if (segments_per_mib > 0) j["buffer_segments_per_mib"] = segments_per_mib;
    Emit(j, f.json);
  }
  return Status::Ok();
}

Status RunBenchIo(const BenchIoFlags& f) {
  STRATA_ASSIGN_OR_RETURN(const IoRequestPlan p, ParseFlags(f));
  STRATA_RETURN_IF_ERROR(storage::CheckWritableDir(f.dir, "--dir"));

  const std::string path = f.dir + "/strata-bench-io.dat";
  storage::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno(errno, "open " + path + " with O_DIRECT");
  struct Remove {
    std::string path;
    bool keep;
    ~Remove() {
      if (!keep) ::unlink(path.c_str());
    }
  } remove{path, f.keep};
  STRATA_RETURN_IF_ERROR(Preallocate(fd, p.size, f.dir));

  storage::IoEngineOptions io;
  io.backend = p.backend;
  io.queue_depth = f.depth;
  io.request_bytes = p.block;
  STRATA_ASSIGN_OR_RETURN(auto engine, IoEngine::Create(io));
  STRATA_ASSIGN_OR_RETURN(int file, engine->register_file(fd.get(), path));
  STRATA_ASSIGN_OR_RETURN(AlignedBuffer buffers,
                          AlignedBuffer::Allocate(f.depth * p.block, f.huge_pages));
  // Registered before it is filled, as the runtime registers its frame pool before using it:
  // the pin faults the pages in (AlignedBuffer's contract), as fio's untouched buffer is.
  if (Status s = engine->register_buffer(buffers.data(), buffers.size()); !s.ok()) {
    Logger("storage")->warn("bench io: fixed buffers not registered ({})", s.message());
  }
  FillRandom(buffers, 3);
  Result<double> segments = storage::PhysicalSegmentsPerMiB(buffers.data(), buffers.size());
  STRATA_RETURN_IF_ERROR(
      RunPatterns(f, p, *engine, file, buffers, path, segments.ok() ? *segments : -1));
  engine->unregister_buffer(buffers.data());
  engine.reset();
  if (f.commits > 0 && f.commit_pages > 0) {
    STRATA_RETURN_IF_ERROR(RunCommitBench(f, p.block, p.backend));
  }
  return Status::Ok();
}

}  // namespace

void AddBenchIoCommand(CLI::App& bench, Status& status) {
  auto flags = std::make_shared<BenchIoFlags>();
  CLI::App* cmd = bench.add_subcommand(
      "io",
      "IoEngine throughput (read, write, randread, randwrite) on an O_DIRECT file in --dir, and "
      "the NVMe store's commit latency; one JSON object per pattern");
  cmd->add_option("--dir", flags->dir, "Directory on the disk to measure (a file is created there)")
      ->required();
  cmd->add_option("--size", flags->size, "File size, e.g. 4G")->capture_default_str();
  cmd->add_option("--block", flags->block, "Transfer (and page) size, e.g. 1M")
      ->capture_default_str();
  cmd->add_option("--depth", flags->depth, "Transfers in flight")->capture_default_str();
  cmd->add_option("--rw", flags->rw, "Patterns: read, write, randread, randwrite (comma list)")
      ->capture_default_str();
  cmd->add_option("--backend", flags->backend, "auto, io_uring or sync")->capture_default_str();
  cmd->add_option("--commits", flags->commits, "Commits for the latency measurement (0: skip)")
      ->capture_default_str();
  cmd->add_option("--commit-pages", flags->commit_pages, "Pages per measured commit")
      ->capture_default_str();
  cmd->add_flag("--json", flags->json, "One JSON object per line (else key=value lines)");
  cmd->add_flag("--keep", flags->keep, "Keep the data file afterwards");
  cmd->add_flag("--huge-pages,!--no-huge-pages", flags->huge_pages,
                "Put the I/O buffers on transparent huge pages (default on)");
  cmd->add_flag("--no-layout", flags->no_layout,
                "The file in --dir is already fully written (by an earlier --keep run): read "
                "patterns skip laying it out");
  cmd->callback([flags, &status] { status = RunBenchIo(*flags); });
}

}  // namespace strata::bench
