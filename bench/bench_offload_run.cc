// `strata bench offload`: running one trainer configuration and summarising its steps, and
// fio's read rate beside the scale run (bench/bench_offload.h).
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_offload.h"
#include "core/util/sizes.h"
#include "scheduler/model_registry.h"

namespace strata::bench::offload {
namespace {

// Process CPU seconds (user + system) so far: Note [CPU bound] in bench/bench_offload.cc.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void LogStep(const char* what, const StepStats& s) {
  std::fprintf(stderr,
               "bench offload: %s step %ld loss %.4f %.3f s %.0f tok/s h2d %s d2h %s "
               "nvme r %s w %s overlap %.2f\n",
               what, s.step, s.loss, s.step_s, s.tokens_per_s,
               FormatBytes(s.moved_bytes.h2d).c_str(), FormatBytes(s.moved_bytes.d2h).c_str(),
               FormatBytes(s.moved_bytes.nvme_read).c_str(),
               FormatBytes(s.moved_bytes.nvme_write).c_str(), s.overlap);
}

}  // namespace

Status CheckRuns(const Flags& f) {
  for (size_t at = 0; at <= f.runs.size();) {
    const size_t comma = std::min(f.runs.find(',', at), f.runs.size());
    const std::string one = f.runs.substr(at, comma - at);
    if (one.size() != 1 || one[0] < '1' || one[0] > '5') {
      return Status::InvalidArgument(
          "--runs must list measurements 1 to 5 separated by commas, "
          "got '" +
          f.runs + "'");
    }
    at = comma + 1;
  }
  if (f.run(4) && !f.run(2)) {
    return Status::InvalidArgument("--runs: measurement 4 runs in 2's configuration; add 2");
  }
  return Status::Ok();
}

void AddRunsOption(CLI::App* cmd, Flags& f) {
  cmd->add_option("--runs", f.runs,
                  "Measurements to run, e.g. 5 (4 needs 2); the JSON holds only theirs")
      ->capture_default_str();
}

bool Flags::run(int n) const {
  for (size_t at = 0; at < runs.size(); at = runs.find(',', at) + 1) {
    if (runs[at] == char('0' + n)) return true;
    if (runs.find(',', at) == std::string::npos) break;
  }
  return false;
}

Result<RunSummary> RunTrainer(const TrainOptions& o, int warmup, const char* what) {
  STRATA_ASSIGN_OR_RETURN(auto trainer, CreateTrainer(o));
  RunSummary r;
  r.shape = trainer->shape();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, ResolveModel(o.model));
  r.model = std::move(model);
  r.seq = trainer->seq();
  // Process CPU seconds at each step's callback, so that a step is charged the optimizer work
  // that spills into it.
  std::vector<double> cpu_at;
  STRATA_RETURN_IF_ERROR(trainer->run([&](const StepStats& s) {
    cpu_at.push_back(ProcessCpuSeconds());
    LogStep(what, s);
    r.steps.push_back(s);
  }));
  std::vector<double> t, tps, cpu;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    if (r.steps[i].step > warmup) {
      t.push_back(r.steps[i].step_s);
      tps.push_back(r.steps[i].tokens_per_s);
      if (i > 0) cpu.push_back(cpu_at[i] - cpu_at[i - 1]);
    }
  }
  if (t.empty()) return Status::InvalidArgument("bench offload: no timed steps");
  r.median_step_s = Median(t);
  r.median_tokens_per_s = Median(tps);
  r.median_cpu_s = Median(cpu);
  r.moved = r.steps.back().moved_bytes;
  r.recompute_layers = r.steps.back().recompute_layers;
  r.overlap = r.steps.back().overlap;
  return r;
}

TrainOptions WithShape(const TrainOptions& base, const ModelShape& shape) {
  TrainOptions o = base;
  o.model.n_layer = shape.layers;
  o.model.n_embd = shape.embd;
  o.model.n_head = shape.heads;
  o.model.block_size = shape.seq;
  o.data.batch = shape.batch;
  o.data.seq = shape.seq;
  return o;
}

void PageUnderBudgets(TrainOptions& o, uint64_t page, uint64_t gpu_mem, uint64_t host_mem,
                      const BenchDir& nvme) {
  o.budgets.engine = "paged";
  o.budgets.paging_flag_given = true;
  o.budgets.page_bytes = page;
  o.budgets.gpu_mem = gpu_mem;
  o.budgets.host_mem = host_mem;
  o.budgets.recompute = "auto";
  o.budgets.nvme_dirs = {nvme.path()};
}

double FioReadBytesPerS(const std::string& dir) {
  if (access("/usr/bin/fio", X_OK) != 0 && access("/usr/local/bin/fio", X_OK) != 0) return -1;
  const std::string file = dir + "/fio-read.dat";
  const std::string cmd = "fio --name=seqread --filename='" + file +
                          "' --ioengine=io_uring --direct=1 --bs=1M --iodepth=16 --rw=read "
                          "--size=1G --output-format=json 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  std::error_code ec;
  std::filesystem::remove(file, ec);
  if (rc != 0) return -1;
  // The first "bw_bytes" is the read job's ("read" precedes "write" in fio's JSON).
  const size_t read_at = out.find("\"read\"");
  if (read_at == std::string::npos) return -1;
  const size_t at = out.find("\"bw_bytes\"", read_at);
  if (at == std::string::npos) return -1;
  const size_t colon = out.find(':', at);
  return colon == std::string::npos ? -1 : std::strtod(out.c_str() + colon + 1, nullptr);
}

}  // namespace strata::bench::offload
