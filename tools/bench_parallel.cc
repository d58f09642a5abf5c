// `strata bench parallel`: what data parallelism costs on this machine, measured side by side.
// Run it without mpirun: it launches its ranks itself (mpirun from PATH or --mpirun), each launch
// under `mpirun --timeout` and a deadline of its own, so nothing can hang. It prints a table (on
// stderr with --json, which prints one JSON object on stdout instead).
//
// 1. collective_efficiency (Note [Collective efficiency]): all-gather and reduce-scatter through
//    the Comm (MPI backend) vs raw MPI_Allgather / MPI_Reduce_scatter_block of the same bytes in
//    the same processes, 2 ranks (tools/bench_parallel_worker.cc). Target >= 0.9.
// 2. dp_scaling (Note [Data-parallel scaling]): `strata train` as 2 ranks of 1 thread vs 1 rank
//    of 2 threads, the same model and global batch, tokens/s. Target >= 0.85.
// Issue 14's later figures (shard_cost, comm_overlap, osdp_vs_zero3) need sharded state, which
// does not exist yet; they are not reported.
//
// Note [Collective efficiency]
// A size is the whole buffer on each rank: the all-gather's output and the reduce-scatter's input
// (so each rank contributes or receives size / ranks). Each op is timed from an MPI_Barrier that
// every rank has passed to its completion on the slowest rank (an MPI_MAX of the ranks' times);
// Strata's time includes its queue hop to the comm thread. Rounds alternate which of Strata and
// MPI goes first; each side's time is the median over --collective-rounds rounds, its rate
// size / time, and the ratio Strata's rate / MPI's. Sizes below 4 MiB measure latency, not
// throughput, and are reported only: collective_efficiency_{all_gather,reduce_scatter} is the
// median of that op's ratios over the sizes >= 4 MiB, and collective_efficiency the median of
// both ops' ratios together (over every size when none is that large). Strata's reduce-scatter is
// deterministic (an all-to-all, then a fold in rank order: Note [Deterministic reductions] in
// docs/parallel.md) while MPI's may reduce as it goes, so it may be slower; it is reported as
// measured. outputs_equal says that both gave the same bits on every rank (with 2 ranks the sum
// of two floats does not depend on its order).
//
// Note [Data-parallel scaling]
// On this 2-core machine the fair comparison is the same cores used two ways: 2 ranks of 1 thread
// (`mpirun -np 2 strata train --dp 2 --threads 1`) vs 1 rank of 2 threads (`strata train
// --threads 2 --engine memory`), the same model and global batch. The ratio of their tokens/s
// (each counts the global batch) is what data parallelism costs against threading: the gradient
// all-reduce, the optimizer run on every rank (replicated state, --shard none), and two
// processes' smaller GEMMs against one process's larger ones. The default model (`small`, batch
// 8 x seq 128) makes compute dominate: a step takes ~0.4 s against ~40 MiB of gradients. Each
// run's tokens/s is the median of its steps after --warmup-steps; rounds alternate which run goes
// first, and dp_scaling is the round with the median ratio (the upper one of an even count).
#include "tools/bench_parallel.h"

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "parallel/comm.h"
#include "tools/bench_dir.h"
#include "tools/command.h"

namespace strata::tools {
namespace {

using parallel_bench::Flags;

Status CheckFlags(const Flags& f) {
  for (const auto& [flag, value] :
       {std::pair{"--rounds", f.rounds}, std::pair{"--collective-rounds", f.collective_rounds},
        std::pair{"--steps", f.steps}, std::pair{"--seq", f.seq}}) {
    if (value <= 0) {
      return Status::InvalidArgument(std::string(flag) + " must be positive, got " +
                                     std::to_string(value));
    }
  }
  if (f.warmup_steps < 0) return Status::InvalidArgument("--warmup-steps must be >= 0");
  if (f.batch <= 0 || f.batch % parallel_bench::kRanks != 0) {
    return Status::InvalidArgument("--batch must be a positive multiple of " +
                                   std::to_string(parallel_bench::kRanks) +
                                   " (the ranks split it), got " + std::to_string(f.batch));
  }
  if (!(f.timeout_s >= 1)) {
    return Status::InvalidArgument("--timeout must be at least 1 second, got " +
                                   std::to_string(f.timeout_s));
  }
  if (!f.collectives && !f.dp) {
    return Status::InvalidArgument("--no-collectives and --no-dp leave nothing to measure");
  }
  if (parallel::DetectLaunch().under_mpi) {
    return Status::InvalidArgument(
        "bench parallel launches its own ranks: run it without mpirun (strata bench parallel)");
  }
  return parallel_bench::ParseSizes(f.sizes).status();
}

Status RunBenchParallel(const Flags& f) {
  STRATA_RETURN_IF_ERROR(CheckFlags(f));
  STRATA_ASSIGN_OR_RETURN(const std::string mpirun, parallel_bench::FindMpirun(f.mpirun));
  STRATA_RETURN_IF_ERROR(parallel_bench::CheckBuiltWithMpi());
  STRATA_ASSIGN_OR_RETURN(const std::string self, parallel_bench::SelfExe());
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BenchDir> dir,
                          BenchDir::Create(ec ? "/tmp" : tmp.string(), "parallel", "TMPDIR"));
  std::optional<parallel_bench::CollectivesResult> coll;
  std::optional<parallel_bench::DpResult> dp;
  if (f.collectives) {
    STRATA_ASSIGN_OR_RETURN(coll, parallel_bench::MeasureCollectives(f, self, mpirun, dir->path()));
  }
  if (f.dp) {
    STRATA_ASSIGN_OR_RETURN(dp, parallel_bench::MeasureDpScaling(f, self, mpirun, dir->path()));
  }
  const auto* c = coll ? &*coll : nullptr;
  const auto* d = dp ? &*dp : nullptr;
  parallel_bench::PrintTable(f, c, d, f.json ? stderr : stdout);
  if (f.json) {
    nlohmann::ordered_json out;  // doubles print with round-trip precision
    parallel_bench::AddReport(f, c, d, out);
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
  return Status::Ok();
}

void AddFlags(CLI::App* cmd, Flags& f) {
  cmd->add_flag("--json", f.json, "Print one JSON object on stdout (the table goes to stderr)");
  cmd->add_option("--mpirun", f.mpirun, "The launcher (default: mpirun on PATH; OpenMPI)");
  cmd->add_option("--timeout", f.timeout_s, "Seconds each launch may take (mpirun --timeout)")
      ->capture_default_str();
  cmd->add_option("--sizes", f.sizes,
                  "1: buffer sizes per rank (the gather's output, the scatter's input)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--collective-rounds", f.collective_rounds,
                  "1: rounds of (Strata, MPI) per op and size; the medians are compared")
      ->capture_default_str();
  cmd->add_option("--model", f.model, "2: model preset")->capture_default_str();
  cmd->add_option("--batch", f.batch, "2: global rows per step")->capture_default_str();
  cmd->add_option("--seq", f.seq, "2: tokens per row")->capture_default_str();
  cmd->add_option("--steps", f.steps, "2: counted steps per run")->capture_default_str();
  cmd->add_option("--warmup-steps", f.warmup_steps, "2: uncounted steps first")
      ->capture_default_str();
  cmd->add_option("--rounds", f.rounds,
                  "2: rounds of (2 ranks, 1 rank); the round with the median ratio is reported")
      ->capture_default_str();
  cmd->add_flag("!--no-collectives", f.collectives, "Skip measurement 1");
  cmd->add_flag("!--no-dp", f.dp, "Skip measurement 2");
}

}  // namespace

void AddBenchParallelCommand(CLI::App& bench, CommandContext& ctx) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = bench.add_subcommand(
      "parallel",
      "Data parallelism: Comm all-gather/reduce-scatter vs raw MPI; 2 ranks x 1 thread vs 1 "
      "rank x 2 threads tokens/s (launches mpirun itself; see tools/bench_parallel.cc)");
  AddFlags(cmd, *f);
  cmd->callback([f, &ctx] { ctx.status = RunBenchParallel(*f); });
}

void AddBenchParallelWorkerCommand(CLI::App& bench, CommandContext& ctx) {
  auto f = std::make_shared<parallel_bench::WorkerFlags>();
  CLI::App* worker = bench.add_subcommand("parallel-worker", "Ranks of `strata bench parallel`");
  worker->group("");  // hidden: `strata bench parallel` launches it
  worker->require_subcommand(1);
  CLI::App* coll = worker->add_subcommand("collectives", "Comm vs raw MPI collectives");
  coll->add_option("--sizes", f->sizes, "Buffer sizes per rank")->delimiter(',')->required();
  coll->add_option("--rounds", f->rounds, "Timed rounds per op and size")->capture_default_str();
  coll->add_option("--comm-timeout", f->comm_timeout_s, "Seconds an op may take")
      ->capture_default_str();
  coll->callback([f, &ctx] { ctx.status = parallel_bench::RunCollectivesWorker(*f); });
}

}  // namespace strata::tools
