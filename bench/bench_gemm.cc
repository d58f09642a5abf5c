// `strata bench gemm`: OpenBLAS sgemm GFLOP/s on this machine — the peak that GEMM-bound work
// (a training step) is measured against.
#include <cblas.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/kernels/matmul.h"
#include "bench/bench_gemm.h"
#include "bench/bench_commands.h"

namespace strata::bench {

namespace {

// Best-of-reps seconds of `gemm` after one untimed warm-up run.
double BestSeconds(int reps, const std::function<void()>& gemm) {
  double best_s = 1e30;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best_s = std::min(best_s, s);
  }
  return best_s;
}

}  // namespace

SgemmPeak MeasureSgemmPeak(int n, int threads, int reps) {
  std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
  }
  const double flops = 2.0 * n * double(n) * n;
  SgemmPeak peak;
  // OpenBLAS's own threaded driver, as any program would call it.
  openblas_set_num_threads(threads);
  peak.openblas_gflops = flops / 1e9 / BestSeconds(reps, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                n, 0.0f, c.data(), n);
  });
  // Strata's deterministic tiling: single-threaded OpenBLAS calls on a TBB arena of `threads`.
  openblas_set_num_threads(1);
  tbb::task_arena arena(threads);
  peak.strata_gflops = flops / 1e9 / BestSeconds(reps, [&] {
    arena.execute([&] {
      kernels::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    });
  });
  return peak;
}

void AddBenchGemmCommand(CLI::App& bench, Status& status) {
  struct Flags {
    int size = 2048;
    int threads = 2;
    int reps = 5;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = bench.add_subcommand("gemm", "sgemm GFLOP/s (n x n x n, best of reps): OpenBLAS threaded and Strata's tiles");
  cmd->add_option("--size", f->size, "Matrix size n")->capture_default_str();
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->capture_default_str();
  cmd->add_option("--reps", f->reps, "Timed repetitions")->capture_default_str();
  cmd->callback([f, &status] {
    if (f->size <= 0 || f->threads <= 0 || f->reps <= 0) {
      status = Status::InvalidArgument("--size, --threads and --reps must be positive");
      return;
    }
    const SgemmPeak p = MeasureSgemmPeak(f->size, f->threads, f->reps);
    nlohmann::ordered_json out;  // doubles print with round-trip precision, NaN as null
    out["bench"] = "gemm";
    out["n"] = f->size;
    out["threads"] = f->threads;
    out["gflops"] = p.peak();
    out["openblas_gflops"] = p.openblas_gflops;
    out["strata_gflops"] = p.strata_gflops;
    std::printf("%s\n", out.dump().c_str());
  });
}

}  // namespace strata::bench
