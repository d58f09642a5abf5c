// `strata bench parallel`: what data and tensor parallelism cost on this machine, measured side
// by side. Run it without mpirun: it launches its ranks itself (mpirun from PATH or --mpirun),
// each launch under `mpirun --timeout` and a deadline of its own, so nothing can hang. It prints a
// table (on stderr with --json, which prints one JSON object on stdout instead).
//
// 1. collective_efficiency (Note [Collective efficiency]): all-gather and reduce-scatter through
//    the Comm (MPI backend) vs raw MPI_Allgather / MPI_Reduce_scatter_block of the same bytes in
//    the same processes, 2 ranks (bench/bench_parallel_worker.cc). Target >= 0.9.
// 2. dp_scaling (Note [Data-parallel scaling]): `strata train` as 2 ranks of 1 thread vs 1 rank
//    of 2 threads, the same model and global batch, tokens/s. Target >= 0.85.
// 3. shard_cost (Note [Shard cost]): `strata train --dp 2 --shard all` (ZeRO-3) vs `--shard
//    none` (replicated), 2 ranks of 1 thread, both on the paged engine with the same budgets, the
//    same model and global batch, tokens/s (bench/bench_parallel_shard.cc). Target >= 0.9.
// 4. comm_overlap (Note [Comm overlap]): the `--shard all` run's step time vs max(compute-only,
//    comm-only), all three measured in the same round. Target <= 1.15.
// 5. osdp_vs_zero3 (Note [OSDP vs ZeRO-3]): `strata train --dp 2 --shard auto` (OSDP's per-block
//    choice) vs `--shard all` (ZeRO-3) with the same budgets, on a host budget where replicating
//    some blocks fits: measured step time all / auto, beside what the auto run predicted
//    (bench/bench_parallel_osdp.cc). Reported, no target.
// 6. tp_efficiency (Note [Tensor-parallel efficiency]): `strata train --tp 2` as 2 ranks of 1
//    thread vs 1 rank of 2 threads, both on the paged engine, the same model and global batch,
//    tokens/s; beside it tp_allreduce_share, the part of the tp2 step its compute stream waits in
//    its own tp all-reduces (bench/bench_parallel_tp.cc). Reported, no target.
// 7. pipeline_bubble (Note [Pipeline bubble]): `strata train --pp 2 --schedule 1f1b` with 8
//    micro-batches, 2 ranks of 1 thread, its step time vs the ideal pipeline step T1 / 2 x
//    (8 + 2 - 1) / 8 from one rank's compute time T1, both measured in each round
//    (bench/bench_parallel_pp.cc). Target <= 1.15.
// 8. schedule_memory (Note [Schedule memory]): rank 0's peak activation bytes of that pp2 run
//    under GPipe vs 1F1B. Reported, no target.
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
//
// Note [Shard cost]
// The same data-parallel run twice, only --shard differing: `mpirun -np 2 strata train --dp 2
// --threads 1 --engine paged --gpu-mem G --host-mem H --shard all` vs the same with `--shard
// none`, the model, global batch, seq and steps of measurement 2. Both use the paged engine
// because --shard all runs only on it (so the engine is not what is compared), and both get
// the same explicit per-rank budgets (--gpu-mem, --host-mem; default 256M and 512M, which hold
// all of `small`'s device working set and host state either way), because each run's default
// budget is what that run needs, and those differ. shard_cost = tokens/s with --shard all /
// with --shard none: what ZeRO-3 costs against replication here, i.e. an all-gather of each
// block's parameters after every load (forward and backward) and a reduce-scatter of the final
// gradients instead of an all-reduce, against half the AdamW work and half the host<->device
// traffic per rank. Each run's tokens/s is the median of its --log-json steps after
// --warmup-steps (tokens_per_s counts the global batch); --shard-rounds rounds alternate which
// run goes first; shard_cost is the round with the median ratio (the upper one of an even
// count), and every round is reported.
//
// Note [Comm overlap]
// comm_overlap = step / max(compute-only, comm-only): how far the sharded step is from hiding
// its communication entirely (1.0: the longer side alone). All three are median times per step
// over the steps after --warmup-steps, with 3's model, batch, budgets and 1 thread per rank:
// - step: `mpirun -np 2 strata train --dp 2 --shard all ...` (3's sharded command, launched
//   anew in each round), rank 0's step time (its --log-json tokens_per_s is the step's global
//   B x T tokens / its step time, so the step time is B x T / tokens_per_s);
// - comm-only: the same run with --movement-only: every all-gather and gradient reduce-scatter,
//   every h2d/d2h copy and page fetch, and the host AdamW of the rank's shard; no kernels;
// - compute-only: the kernels alone, with no Comm at all: kRanks single-rank `strata train`
//   processes started at once (no mpirun), each of the per-rank batch B / 2 with the same
//   engine, budgets and thread count, --trace; a process's time per step is its trace's compute
//   queue busy time in that step (the sum of its kernels' durations; steps count from 0 there),
//   and compute-only is the slower process's median.
// Why that compute-only: (a) the kernels, not those runs' step times, because a step also holds
// page copies and AdamW (of the whole model in a single-rank run), which comm-only already
// counts: kernels | everything else splits the step in two, and max of the two is the least a
// perfectly overlapped step can take. (b) Not the sharded run's own compute queue: on this CPU
// machine its kernels share the cores with the collectives (MPI's copies, the reduce-scatter's
// fold), so their busy time would include the slowdown the collectives cause, which is a cost
// of imperfect overlap that the figure should show, not absorb. (c) Two processes at once, not
// one: the sharded ranks compute side by side on the 2 cores, sharing caches and memory
// bandwidth; one process alone would have the machine to itself and time faster kernels than
// any rank of the job can run even with free collectives, which would overstate the factor.
// The two start together and run the same steps; the warmup steps absorb their start skew.
// --overlap-rounds rounds rotate which of the three launches goes first; comm_overlap is the
// round with the median factor (the upper one of an even count), and every round is reported.
//
// Note [OSDP vs ZeRO-3]
// Does OSDP's choice (Note [OSDP's choice] in scheduler/shard_search.h) pay, and did it predict
// what it gets? The same data-parallel run twice, only --shard differing: `mpirun -np 2 strata
// train --dp 2 --threads 1 --engine paged --gpu-mem G --host-mem H --page-size P --shard auto`
// vs the same with `--shard all`, 3's model, global batch, seq, steps and --gpu-mem, both logging
// at info level (the auto run's first line is an info line). The host budget H (--osdp-host-mem,
// default 160M, with P = --osdp-page-size 1M) is one where replicating some blocks fits but not
// all: for `small` a rank's state is 104 MiB with every block sharded and 200 MiB replicated
// (without --nvme-dir every page must fit H), so auto has a real choice while all is ZeRO-3 in
// the same budget. Measured: each run's median step time over its --log-json steps after
// --warmup-steps (B x T / tokens_per_s, as comm_overlap's step), and osdp_vs_zero3 = all's step
// / auto's step (> 1: auto is faster). Predicted: parsed from the auto run's first line (rank 0's
// `grid: ... | blocks DECISION (--shard auto: predicted step A ms (every block sharded B ms, every
// block replicated C ms), state S per rank of a budget of H)`), which auto measured at its own
// start-up (collective rates, block compute) in that run; osdp_predicted_ratio = B / A, the
// figure osdp_vs_zero3 would be if the model were right. The prediction is printed to 4
// significant digits, so a predicted ratio within ~1e-3 of 1 reads as 1. The all run's step is
// measured, not predicted (it makes no prediction). --osdp-rounds rounds alternate which run goes
// first; osdp_vs_zero3 is the round with the median ratio (the upper one of an even count), with
// that round's prediction and decision; every round's times, predictions and decisions are
// reported (auto chooses anew in each run, from its own measurements). Where compute hides
// every block's collectives either way (as with `small` on 2 CPU cores), the three predicted
// steps tie and the search's tie-break on measured communication decides, so the decision may
// differ between rounds, and may be every block sharded, i.e. the same run as all.
//
// Note [Tensor-parallel efficiency]
// What Megatron-style tensor parallelism costs against threading on the same cores, as
// dp_scaling asks for data parallelism: `mpirun -np 2 strata train --tp 2 --threads 1 --engine
// paged` vs `strata train --threads 2 --engine paged`, 2's model, global batch, seq and steps
// (the model must have a head count and a vocabulary padded to a multiple of 128 that 2 divides,
// as `small` and `tiny` do; the tp2 run says so otherwise). Both are paged because each tp rank
// pages its slice (--tp runs only on the paged engine), and both take their default budgets,
// i.e. what each run needs: a tp rank holds half the state, so one budget for both would either
// be more than a tp rank needs or squeeze the single rank into paging that the tp run does not
// do. tp_efficiency = tp2 tokens/s / 1-rank tokens/s: the tp all-reduces on the compute stream
// (2 per block in forward and 2 in backward, and the vocab-parallel embedding's and
// cross-entropy's), each rank's narrower GEMMs, and the replicated layernorms and residuals,
// against one process's full-width GEMMs on 2 threads. Each run's tokens/s is the median of its
// --log-json steps after --warmup-steps (tokens_per_s counts the global batch); --tp-rounds
// rounds alternate which run goes first; tp_efficiency is the round with the median ratio (the
// upper one of an even count), and every round is reported. tp_allreduce_share: in the tp2 run,
// the median over the counted steps of rank 0's compute_comm_s (seconds its compute stream waited
// in its own tp all-reduces) / the median of its step time (B x T / tokens_per_s); the figure is
// the median over the rounds. The wait includes the time the other rank
// takes to arrive at the collective, so it is what the step spends in the all-reduces, not
// their bytes / bandwidth.
//
// Note [Pipeline bubble]
// How close a pipelined step comes to the ideal pipeline: `mpirun -np 2 strata train --pp 2
// --schedule 1f1b --pp-partition auto --threads 1 --engine paged --batch B --micro-batch B/8`,
// i.e. M = 8 micro-batches per step (--batch must be a multiple of 8), 2's model, seq and steps,
// at its default budgets, against ideal = T1 / P x (M + P - 1) / M = T1 / 2 x 9 / 8: each of the
// P stages doing half of one rank's compute T1, plus 1F1B's P - 1 idle micro-batch slots (the
// bubble itself). pipeline_bubble = the pp2 run's median step (rank 0's B x T / tokens_per_s over
// the steps after --warmup-steps) / ideal, so it counts what the schedule's own bubble does not:
// the stages' imbalance, the activation sends and receives, each stage's paging and AdamW.
// T1 is compute, not movement, measured the way comm_overlap's compute-only is (Note [Comm
// overlap]): one rank with the same model, batch, micro-batch, seq, steps, engine and thread
// (`strata train --threads 1 --engine paged --micro-batch B/8 --trace`, no mpirun), kRanks such
// processes started together so that their kernels share the 2 cores' caches and memory bandwidth
// as the two stages' do (one process alone would time faster kernels than either stage can run),
// each one's median compute-queue busy time per counted step from its trace (the sum of its
// kernels), and T1 the slower one's (a pipeline's step waits for its slower stage). Not the
// stages' own busy time: a stage's receive waits are inside its compute ops. What T1 does not
// match: a stage holds half the blocks, so its kernels work on a set of weights half the size of a
// whole-model rank's (for `small` about 21 of 43 MB, against this machine's 32 MiB L3), and may
// run faster per unit of work than T1's; the figure can then come out below 1, and ideal is the
// issue's yardstick rather than a bound. Both are launched anew in each round, --pp-rounds rounds
// alternating which goes first; pipeline_bubble is the round with the median figure (the upper one
// of an even count), and every round is reported. Beside it, to say where the step goes:
// pp2_compute_comm_s, rank 0's (stage 0's) median seconds its compute stream waited in its own
// activation receives (its gradients from stage 1: the bubble's slots, the other stage's lateness
// and the transfers together; an ideal 1F1B of equal stages idles (P - 1) / (M + P - 1) = 1/9 of
// the step there), its share of the step, and the stages that the pp2 run's first line names with
// their predicted times per micro-batch (the costs --pp-partition auto measured at its start, Note
// [Stage partition]) and pp_stage_imbalance, the slowest stage's predicted time over their mean.
//
// Note [Schedule memory]
// What 1F1B saves in activations against GPipe: the pp2 run above (8 micro-batches, --pp-partition
// auto) twice, `--schedule gpipe` and `--schedule 1f1b`, 2 steps each, one round (the numbers do
// not depend on timing). Each run's figure is the largest peak_bytes.activations in rank 0's
// --log-json (stage 0's device bytes of activations: P micro-batches' sets under 1F1B, all M under
// GPipe, beside the pieces either schedule carves alike, such as each micro-batch's residual
// gradient: Notes [Stage activations] and [Tied gradient order] in scheduler/activations.h, so the
// ratio stays below M / P = 4); schedule_memory = GPipe's / 1F1B's, reported with both byte counts.
#include "bench/bench_parallel.h"

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench/bench_dir.h"
#include "bench/bench_commands.h"

namespace strata::bench {
namespace {

using parallel_bench::Flags;
using parallel_bench::AddFigureFlags;
using parallel_bench::AddFlags;
using parallel_bench::CheckFlags;

// Every figure's result; one that was skipped stays empty.
struct Measured {
  std::optional<parallel_bench::CollectivesResult> coll;
  std::optional<parallel_bench::DpResult> dp;
  std::optional<parallel_bench::ShardResult> shard;
  std::optional<parallel_bench::OverlapResult> overlap;
  std::optional<parallel_bench::OsdpResult> osdp;
  std::optional<parallel_bench::TpResult> tp;
  std::optional<parallel_bench::PpResult> pp;
  std::optional<parallel_bench::ScheduleMemory> memory;
};

template <typename T>
const T* Get(const std::optional<T>& o) {
  return o ? &*o : nullptr;
}

Status MeasureAll(const Flags& f, const std::string& self, const std::string& mpirun,
                  const std::string& dir, Measured& m) {
  namespace pb = parallel_bench;
  if (f.collectives) {
    STRATA_ASSIGN_OR_RETURN(m.coll, pb::MeasureCollectives(f, self, mpirun, dir));
  }
  if (f.dp) {
    STRATA_ASSIGN_OR_RETURN(m.dp, pb::MeasureDpScaling(f, self, mpirun, dir));
  }
  if (f.shard_cost) {
    STRATA_ASSIGN_OR_RETURN(m.shard, pb::MeasureShardCost(f, self, mpirun, dir));
  }
  if (f.comm_overlap) {
    STRATA_ASSIGN_OR_RETURN(m.overlap, pb::MeasureCommOverlap(f, self, mpirun, dir));
  }
  if (f.osdp) {
    STRATA_ASSIGN_OR_RETURN(m.osdp, pb::MeasureOsdp(f, self, mpirun, dir));
  }
  if (f.tp) {
    STRATA_ASSIGN_OR_RETURN(m.tp, pb::MeasureTpEfficiency(f, self, mpirun, dir));
  }
  if (f.pp) {
    STRATA_ASSIGN_OR_RETURN(m.pp, pb::MeasurePipelineBubble(f, self, mpirun, dir));
    STRATA_ASSIGN_OR_RETURN(m.memory, pb::MeasureScheduleMemory(f, self, mpirun, dir));
  }
  return Status::Ok();
}

// The table (on stderr with --json), then with --json the object on stdout.
void Report(const Flags& f, const Measured& m) {
  namespace pb = parallel_bench;
  std::FILE* table = f.json ? stderr : stdout;
  pb::PrintTable(f, Get(m.coll), Get(m.dp), table);
  pb::PrintShardTable(f, Get(m.shard), Get(m.overlap), table);
  pb::PrintOsdpTable(f, Get(m.osdp), table);
  pb::PrintTpTable(f, Get(m.tp), table);
  pb::PrintPpTable(f, Get(m.pp), Get(m.memory), table);
  if (!f.json) return;
  nlohmann::ordered_json out;  // doubles print with round-trip precision
  pb::AddReport(f, Get(m.coll), Get(m.dp), out);
  pb::AddShardReport(f, Get(m.shard), Get(m.overlap), out);
  pb::AddOsdpReport(f, Get(m.osdp), out);
  pb::AddTpReport(f, Get(m.tp), out);
  pb::AddPpReport(f, Get(m.pp), Get(m.memory), out);
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
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
  Measured m;
  STRATA_RETURN_IF_ERROR(MeasureAll(f, self, mpirun, dir->path(), m));
  Report(f, m);
  return Status::Ok();
}

}  // namespace

void AddBenchParallelCommand(CLI::App& bench, Status& status) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = bench.add_subcommand(
      "parallel",
      "Data, tensor and pipeline parallelism: Comm all-gather/reduce-scatter vs raw MPI; 2 "
      "ranks x 1 thread vs 1 rank x 2 threads tokens/s; --shard all vs none tokens/s; the sharded "
      "step vs max(compute, comm); --shard auto vs all step time, predicted and measured; --tp 2 "
      "vs 1 rank x 2 threads tokens/s; the --pp 2 1F1B step vs the ideal pipeline, GPipe vs 1F1B "
      "activation bytes (launches mpirun itself; see bench/bench_parallel.cc)");
  AddFlags(cmd, *f);
  AddFigureFlags(cmd, *f);
  cmd->callback([f, &status] { status = RunBenchParallel(*f); });
}

void AddBenchParallelWorkerCommand(CLI::App& bench, Status& status) {
  auto f = std::make_shared<parallel_bench::WorkerFlags>();
  CLI::App* worker = bench.add_subcommand("parallel-worker", "Ranks of `strata bench parallel`");
  worker->group("");  // hidden: `strata bench parallel` launches it
  worker->require_subcommand(1);
  CLI::App* coll = worker->add_subcommand("collectives", "Comm vs raw MPI collectives");
  coll->add_option("--sizes", f->sizes, "Buffer sizes per rank")->delimiter(',')->required();
  coll->add_option("--rounds", f->rounds, "Timed rounds per op and size")->capture_default_str();
  coll->add_option("--comm-timeout", f->comm_timeout_s, "Seconds an op may take")
      ->capture_default_str();
  coll->callback([f, &status] { status = parallel_bench::RunCollectivesWorker(*f); });
}

}  // namespace strata::bench
