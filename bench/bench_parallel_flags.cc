// `strata bench parallel`'s flags (bench/bench_parallel.cc has what each figure measures) and
// their checks.
#include <string>
#include <utility>

#include "core/util/sizes.h"
#include "parallel/comm.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {

Status CheckFlags(const Flags& f) {
  for (const auto& [flag, value] :
       {std::pair{"--rounds", f.rounds}, std::pair{"--collective-rounds", f.collective_rounds},
        std::pair{"--steps", f.steps}, std::pair{"--seq", f.seq},
        std::pair{"--shard-rounds", f.shard_rounds},
        std::pair{"--overlap-rounds", f.overlap_rounds}, std::pair{"--osdp-rounds", f.osdp_rounds},
        std::pair{"--tp-rounds", f.tp_rounds}, std::pair{"--pp-rounds", f.pp_rounds}}) {
    if (value <= 0) {
      return Status::InvalidArgument(std::string(flag) + " must be positive, got " +
                                     std::to_string(value));
    }
  }
  if (f.warmup_steps < 0) return Status::InvalidArgument("--warmup-steps must be >= 0");
  if (f.batch <= 0 || f.batch % kRanks != 0) {
    return Status::InvalidArgument("--batch must be a positive multiple of " +
                                   std::to_string(kRanks) +
                                   " (the ranks split it), got " + std::to_string(f.batch));
  }
  if (f.pp && f.batch % kPpMicroBatches != 0) {
    return Status::InvalidArgument(
        "--batch must be a multiple of " + std::to_string(kPpMicroBatches) +
        " for pipeline_bubble and schedule_memory (that many micro-batches per step), got " +
        std::to_string(f.batch) + "; or pass --no-pp");
  }
  if (!(f.timeout_s >= 1)) {
    return Status::InvalidArgument("--timeout must be at least 1 second, got " +
                                   std::to_string(f.timeout_s));
  }
  for (const auto& [flag, value] :
       {std::pair{"--gpu-mem", &f.gpu_mem}, std::pair{"--host-mem", &f.host_mem},
        std::pair{"--osdp-host-mem", &f.osdp_host_mem},
        std::pair{"--osdp-page-size", &f.osdp_page_size}}) {
    STRATA_ASSIGN_OR_RETURN(const uint64_t bytes, ParseBytes(*value, flag));
    if (bytes == 0) return Status::InvalidArgument(std::string(flag) + " must be positive");
  }
  if (!f.collectives && !f.dp && !f.shard_cost && !f.comm_overlap && !f.osdp && !f.tp && !f.pp) {
    return Status::InvalidArgument(
        "--no-collectives, --no-dp, --no-shard-cost, --no-comm-overlap, --no-osdp, --no-tp and "
        "--no-pp leave nothing to measure");
  }
  if (parallel::DetectLaunch().under_mpi) {
    return Status::InvalidArgument(
        "bench parallel launches its own ranks: run it without mpirun (strata bench parallel)");
  }
  return ParseSizes(f.sizes).status();
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
  cmd->add_option("--model", f.model, "2-8: model preset")->capture_default_str();
  cmd->add_option("--batch", f.batch, "2-8: global rows per step (7 and 8: a multiple of 8)")
      ->capture_default_str();
  cmd->add_option("--seq", f.seq, "2-8: tokens per row")->capture_default_str();
  cmd->add_option("--steps", f.steps, "2-7: counted steps per run")->capture_default_str();
  cmd->add_option("--warmup-steps", f.warmup_steps, "2-7: uncounted steps first")
      ->capture_default_str();
  cmd->add_option("--rounds", f.rounds,
                  "2: rounds of (2 ranks, 1 rank); the round with the median ratio is reported")
      ->capture_default_str();
}

// 3-8's options, and the flags that leave a figure out.
void AddFigureFlags(CLI::App* cmd, Flags& f) {
  cmd->add_option("--gpu-mem", f.gpu_mem, "3-5: device budget of every paged run, per rank")
      ->capture_default_str();
  cmd->add_option("--host-mem", f.host_mem, "3-4: host pool budget of every paged run, per rank")
      ->capture_default_str();
  cmd->add_option("--shard-rounds", f.shard_rounds,
                  "3: rounds of (--shard all, --shard none); the round with the median ratio is "
                  "reported")
      ->capture_default_str();
  cmd->add_option("--overlap-rounds", f.overlap_rounds,
                  "4: rounds of (sharded step, comm-only, compute-only); the round with the "
                  "median factor is reported")
      ->capture_default_str();
  cmd->add_option("--osdp-rounds", f.osdp_rounds,
                  "5: rounds of (--shard auto, --shard all); the round with the median ratio is "
                  "reported")
      ->capture_default_str();
  cmd->add_option("--osdp-host-mem", f.osdp_host_mem,
                  "5: host pool budget of both runs, per rank: one where replicating some "
                  "blocks fits but not all")
      ->capture_default_str();
  cmd->add_option("--osdp-page-size", f.osdp_page_size, "5: page size of both runs")
      ->capture_default_str();
  cmd->add_option("--tp-rounds", f.tp_rounds,
                  "6: rounds of (--tp 2, 1 rank x 2 threads); the round with the median ratio is "
                  "reported")
      ->capture_default_str();
  cmd->add_option("--pp-rounds", f.pp_rounds,
                  "7: rounds of (--pp 2 --schedule 1f1b, 1 rank's compute time); the round with "
                  "the median pipeline_bubble is reported")
      ->capture_default_str();
  cmd->add_flag("!--no-collectives", f.collectives, "Skip measurement 1");
  cmd->add_flag("!--no-dp", f.dp, "Skip measurement 2");
  cmd->add_flag("!--no-shard-cost", f.shard_cost, "Skip measurement 3");
  cmd->add_flag("!--no-comm-overlap", f.comm_overlap, "Skip measurement 4");
  cmd->add_flag("!--no-osdp", f.osdp, "Skip measurement 5");
  cmd->add_flag("!--no-tp", f.tp, "Skip measurement 6");
  cmd->add_flag("!--no-pp", f.pp, "Skip measurements 7 and 8");
}

}  // namespace strata::bench::parallel_bench
