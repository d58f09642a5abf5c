// `strata bench gemm`: OpenBLAS sgemm GFLOP/s on this machine — the peak that GEMM-bound work
// (a training step) is measured against.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/kernels/matmul.h"
#include "tools/bench_gemm.h"
#include "tools/command.h"
#include "tools/json_number.h"

namespace strata::tools {

double MeasureSgemmGflops(int n, int threads, int reps) {
  kernels::set_blas_threads(threads);
  std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
  }
  double best_s = 1e30;
  for (int r = 0; r < reps + 1; ++r) {  // the first run warms caches and threads
    const auto t0 = std::chrono::steady_clock::now();
    kernels::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best_s = std::min(best_s, s);
  }
  return 2.0 * n * double(n) * n / best_s / 1e9;
}

void AddBenchGemmCommand(CLI::App& bench, CommandContext& ctx) {
  struct Flags {
    int size = 2048;
    int threads = 2;
    int reps = 5;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = bench.add_subcommand("gemm", "OpenBLAS sgemm GFLOP/s (n x n x n, best of reps)");
  cmd->add_option("--size", f->size, "Matrix size n")->capture_default_str();
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->capture_default_str();
  cmd->add_option("--reps", f->reps, "Timed repetitions")->capture_default_str();
  cmd->callback([f, &ctx] {
    if (f->size <= 0 || f->threads <= 0 || f->reps <= 0) {
      ctx.status = Status::InvalidArgument("--size, --threads and --reps must be positive");
      return;
    }
    const double gflops = MeasureSgemmGflops(f->size, f->threads, f->reps);
    std::printf("{\"bench\":\"gemm\",\"n\":%d,\"threads\":%d,\"gflops\":%s}\n", f->size,
                f->threads, DoubleToJson(gflops).c_str());
  });
}

}  // namespace strata::tools
