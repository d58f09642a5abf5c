// `strata bench parallel` in parts (internal to bench/; bench/bench_parallel.cc is the command,
// what it measures and why):
// - bench_parallel_child.cc: child processes with a deadline, finding mpirun and this binary;
// - bench_parallel_collectives.cc: 1, launching the collectives worker under mpirun and
//   turning its timings into rates and ratios;
// - bench_parallel_worker.cc: the worker itself (`strata bench parallel-worker collectives`,
//   hidden), which times the Comm and raw MPI side by side on every rank;
// - bench_parallel_dp.cc: 2, `strata train` as 2 ranks of 1 thread vs 1 rank of 2 threads;
// - bench_parallel_report.cc: the JSON object and the table of 1 and 2;
// - bench_parallel_shard.cc: 3, `--shard all` vs `--shard none`, and 4, a sharded step vs its
//   communication-only and compute-only parts;
// - bench_parallel_shard_report.cc: the JSON fields and the table of 3 and 4;
// - bench_parallel_osdp.cc: 5, `--shard auto` (OSDP) vs `--shard all` (ZeRO-3), predicted and
//   measured, with its JSON fields and table;
// - bench_parallel_tp.cc: 6, `strata train --tp 2` (2 ranks of 1 thread) vs 1 rank of 2 threads,
//   with the share of the tp2 step spent in its all-reduces, its JSON fields and table;
// - bench_parallel_pp.cc: 7, `strata train --pp 2 --schedule 1f1b` against the ideal pipeline
//   step from one rank's compute time, and 8, rank 0's peak activation bytes under GPipe vs
//   1F1B, with their JSON fields and table.
#pragma once

#include <cstdint>
#include <cstdio>
#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata::bench::parallel_bench {

inline constexpr int kRanks = 2;  // every figure runs 2 ranks
inline constexpr double kCollectiveTarget = 0.9;
inline constexpr double kDpScalingTarget = 0.85;
inline constexpr double kShardCostTarget = 0.9;     // --shard all / --shard none tokens/s, at least
inline constexpr double kCommOverlapTarget = 1.15;  // step / max(compute, comm), at most
inline constexpr double kPipelineBubbleTarget = 1.15;  // pp2 step / ideal step, at most
inline constexpr int kPpMicroBatches = 8;  // 7 and 8: micro-batches per step, of --batch / 8 rows
// Sizes at or above this count towards collective_efficiency (smaller ones measure latency).
inline constexpr uint64_t kEfficiencyMinBytes = 4 << 20;

struct Flags {
  bool json = false;
  std::string mpirun;      // empty: `mpirun` on PATH
  double timeout_s = 300;  // per child launch (mpirun --timeout, and our own deadline)
  std::vector<std::string> sizes = {"1M", "4M", "16M", "64M"};  // per rank, the whole buffer
  int collective_rounds = 9;
  std::string model = "small";
  int batch = 8;
  int seq = 128;
  int steps = 10;  // counted steps of each training run
  int warmup_steps = 2;
  int rounds = 3;  // rounds of (2 ranks, 1 rank)
  // 3 and 4 (model, batch, seq and steps are 2's): the budgets of every paged run, each rank's.
  std::string gpu_mem = "256M", host_mem = "512M";
  int shard_rounds = 3;    // rounds of (--shard all, --shard none)
  int overlap_rounds = 3;  // rounds of (sharded step, comm-only, compute-only)
  // 5 (model, batch, seq, steps and --gpu-mem are 3's): a host budget, each rank's, that holds
  // every block sharded but not every block replicated (`small` at 1M pages: 104 and 200 MiB).
  std::string osdp_host_mem = "160M", osdp_page_size = "1M";
  int osdp_rounds = 3;  // rounds of (--shard auto, --shard all)
  int tp_rounds = 3;    // 6 (model, batch, seq and steps are 2's): rounds of (--tp 2, 1 rank)
  int pp_rounds = 3;    // 7 (model, batch, seq and steps are 2's): rounds of (--pp 2, 1 rank)
  bool collectives = true;
  bool dp = true;
  bool shard_cost = true;
  bool comm_overlap = true;
  bool osdp = true;
  bool tp = true;
  bool pp = true;  // 7 and 8
};

// The command's flags (bench_parallel_flags.cc): the shared options, the figures' options and
// the flags that leave a figure out, and their checks (InvalidArgument naming the flag).
void AddFlags(CLI::App* cmd, Flags& f);
void AddFigureFlags(CLI::App* cmd, Flags& f);
Status CheckFlags(const Flags& f);

// --- Child processes (bench_parallel_child.cc) ---

struct ChildResult {
  int exit_code = -1;  // -1: killed by a signal or by the deadline
  bool timed_out = false;
  std::string out, err;  // the whole stdout, the last few KiB of stderr
};

// Runs argv[0] (a path) with `argv`, stdin from /dev/null, stdout and stderr to files
// `dir`/`tag`.{out,err}, in this process's group (a Ctrl-C reaches it too). After `timeout_s` it
// gets SIGTERM (mpirun passes that on to its ranks), then SIGKILL 5 s later. Errors: IoError and
// the like from errno when it cannot start.
Result<ChildResult> RunChild(const std::vector<std::string>& argv, const std::string& dir,
                             const std::string& tag, double timeout_s);

// The whole text of the file at `path`; empty when it cannot be read (a child's stderr file,
// which RunChild's result keeps only the tail of).
std::string ReadWholeFile(const std::string& path);
// `self train` of the flags' model, global batch, seq and warmup + counted steps, rank 0 logging
// each step to `log_json` (bench_parallel_dp.cc); figures add their own flags after it.
std::vector<std::string> TrainRunArgs(const Flags& f, const std::string& self,
                                      const std::string& log_json);

// The launcher: --mpirun if given (InvalidArgument when it is not an executable file), else
// `mpirun` on PATH (NotSupported, saying what to install or pass, when there is none).
Result<std::string> FindMpirun(const std::string& flag_value);
// This process's binary (/proc/self/exe).
Result<std::string> SelfExe();
// `mpirun --allow-run-as-root --oversubscribe --timeout T -np N`, each child's prefix.
std::vector<std::string> MpirunPrefix(const std::string& mpirun, double timeout_s, int ranks);
// `argv` as a user would type it: this binary as `strata`, the launcher as `mpirun`, files in
// `dir` by their names alone.
std::string DisplayCommand(const std::vector<std::string>& argv, const std::string& self,
                           const std::string& mpirun, const std::string& dir);
// An error for a child that failed: `what` and its exit code or deadline, the tail of its
// stderr, and what to try.
Status ChildFailed(const std::string& what, const ChildResult& r, double timeout_s);

// --- 1. Collectives (bench_parallel_collectives.cc) ---

struct CollectiveSample {
  std::string op;      // "all_gather" or "reduce_scatter"
  uint64_t bytes = 0;  // the whole buffer on each rank (the gather's output, the scatter's input)
  double strata_s = 0, mpi_s = 0;  // medians over the rounds, the slowest rank's time
  double strata_bytes_per_s = 0, mpi_bytes_per_s = 0;
  double ratio = 0;            // strata / mpi bytes per second
  bool outputs_equal = false;  // Strata's output bits == MPI's on every rank
};

struct CollectivesResult {
  std::vector<CollectiveSample> samples;   // size-major, all_gather then reduce_scatter
  std::string thread_level;                // what MPI provided to the worker
  std::vector<uint64_t> efficiency_sizes;  // the sizes the efficiencies are taken over
  double efficiency = 0, all_gather = 0, reduce_scatter = 0;
  std::string command;  // how to run the worker by hand
};

// Parses --sizes into bytes: InvalidArgument unless each is a positive multiple of
// 4 * kRanks bytes and at most 1 GiB.
Result<std::vector<uint64_t>> ParseSizes(const std::vector<std::string>& sizes);
Result<CollectivesResult> MeasureCollectives(const Flags& f, const std::string& self,
                                             const std::string& mpirun, const std::string& dir);

// The worker's flags (`strata bench parallel-worker collectives`).
struct WorkerFlags {
  std::vector<std::string> sizes;
  int rounds = 9;
  double comm_timeout_s = 300;
};
// Times the Comm (MPI backend) and raw MPI on every rank; rank 0 prints one JSON line
// (bench_parallel_worker.cc). NotSupported without MPI.
Status RunCollectivesWorker(const WorkerFlags& f);
// NotSupported, saying what to install, when this strata was built without MPI.
Status CheckBuiltWithMpi();

// --- 2. Data-parallel scaling (bench_parallel_dp.cc) ---

struct DpRound {
  double dp2_tokens_per_s = 0, dp1_tokens_per_s = 0;  // medians of the counted steps
  double ratio() const { return dp2_tokens_per_s / dp1_tokens_per_s; }
};

struct DpResult {
  std::vector<DpRound> rounds;
  std::string dp2_command, dp1_command;
  std::vector<double> ratios() const;
  const DpRound& median() const;  // the round with the median ratio (the upper of an even count)
};

Result<DpResult> MeasureDpScaling(const Flags& f, const std::string& self,
                                  const std::string& mpirun, const std::string& dir);

// --- 3. Shard cost and 4. comm overlap (bench_parallel_shard.cc) ---

struct ShardRound {
  double all_tokens_per_s = 0, none_tokens_per_s = 0;  // medians of the counted steps
  bool all_first = true;                               // which of the two ran first
  double ratio() const { return all_tokens_per_s / none_tokens_per_s; }
};

struct ShardResult {
  std::vector<ShardRound> rounds;
  std::string all_command, none_command;
  std::vector<double> ratios() const;
  const ShardRound& median() const;  // the round with the median ratio (the upper of an even count)
};

Result<ShardResult> MeasureShardCost(const Flags& f, const std::string& self,
                                     const std::string& mpirun, const std::string& dir);

struct OverlapRound {
  double step_s = 0;       // the sharded run's median step
  double comm_only_s = 0;  // the same run with --movement-only
  // Per process of the pair, the median compute-queue busy time per step; compute_only_s is
  // the larger (Note [Comm overlap]).
  double compute_only_process_s[kRanks] = {};
  double compute_only_s = 0;
  std::string order;      // the launches in the order they ran, e.g. "step,comm-only,compute-only"
  double factor() const;  // step / max(compute-only, comm-only)
};

struct OverlapResult {
  std::vector<OverlapRound> rounds;
  std::string step_command, comm_only_command, compute_only_command;  // the last: each process
  std::vector<double> factors() const;
  const OverlapRound& median() const;  // the round with the median factor (the upper of even)
};

Result<OverlapResult> MeasureCommOverlap(const Flags& f, const std::string& self,
                                         const std::string& mpirun, const std::string& dir);

// One `strata train` launch of 3, 4 and 5 (bench/bench_parallel_shard.cc).
struct Launch {
  std::vector<std::string> argv;
  std::string out_file;  // its --log-json (a compute-only process: its --trace)
  std::string tag, display;
};

// Runs `run` with its old --log-json (or trace) removed first, so that only this run's steps
// count; the child's failure as ChildFailed's error (bench_parallel_child.cc).
Status RunFresh(const Flags& f, const Launch& run, const std::string& dir);

// kRanks data-parallel ranks of the global batch under mpirun on the paged engine with 3's
// budgets, one thread each, --shard `shard`, --log-level warn, rank 0 logging each step to
// `log_json`.
std::vector<std::string> DpArgs(const Flags& f, const std::string& self, const std::string& mpirun,
                                const std::string& shard, const std::string& log_json);
// Runs `run` (its old log removed first, so that only this run's steps count) and returns its
// median step time (seconds) over the steps after --warmup-steps: each step's B x T tokens / its
// --log-json tokens_per_s.
Result<double> MedianStepS(const Flags& f, const Launch& run, const std::string& dir);

// Starts the single-rank `strata train` launches of `pair` at once (no mpirun; each one's out_file
// is its --trace, removed first) and returns each one's MedianComputeBusyS over the steps after
// --warmup-steps, in `pair`'s order (Note [Comm overlap]).
Result<std::vector<double>> ComputeOnlyPair(const Flags& f, const std::vector<Launch>& pair,
                                            const std::string& dir);

// The median busy time per step (seconds) of the compute queue in a Chrome trace that
// `strata train --trace` wrote, over the steps numbered >= `first_step` (the trace counts steps
// from 0); Internal when the file holds no such step.
Result<double> MedianComputeBusyS(const std::string& trace_path, int first_step);

// --- 5. OSDP vs ZeRO-3 (bench_parallel_osdp.cc) ---

// What the --shard auto run's first line says (Note [OSDP vs ZeRO-3]).
struct OsdpChoice {
  std::string decision;  // each block's, e.g. "0-3: replicated, 4-6: sharded, 7: replicated"
  std::string text;      // the whole "--shard auto: predicted step ... of a budget of ..."
  double predicted_auto_s = 0, predicted_all_sharded_s = 0, predicted_all_replicated_s = 0;
};

// Parses the line `grid: dp ... | blocks DECISION (--shard auto: predicted step A ms (every
// block sharded B ms, every block replicated C ms), ...), split-ops ...` out of a run's stderr;
// Internal, quoting what it found, when there is no such line.
Result<OsdpChoice> ParseOsdpChoice(const std::string& stderr_text);

struct OsdpRound {
  double auto_step_s = 0, all_step_s = 0;  // measured: medians of the counted steps
  bool auto_first = true;                  // which of the two ran first
  OsdpChoice choice;                       // what this round's auto run chose and predicted
  double ratio() const { return all_step_s / auto_step_s; }  // > 1: auto is faster
  double predicted_ratio() const {
    return choice.predicted_all_sharded_s / choice.predicted_auto_s;
  }
};

struct OsdpResult {
  std::vector<OsdpRound> rounds;
  std::string auto_command, all_command;
  std::vector<double> ratios() const;
  const OsdpRound& median() const;  // the round with the median ratio (the upper of an even count)
};

Result<OsdpResult> MeasureOsdp(const Flags& f, const std::string& self, const std::string& mpirun,
                               const std::string& dir);
// 5's JSON fields and table (after 3 and 4's); nothing when `osdp` is nullptr.
void AddOsdpReport(const Flags& f, const OsdpResult* osdp, nlohmann::ordered_json& out);
void PrintOsdpTable(const Flags& f, const OsdpResult* osdp, std::FILE* stream);

// --- 6. Tensor-parallel efficiency (bench_parallel_tp.cc) ---

struct TpRound {
  double tp2_tokens_per_s = 0, tp1_tokens_per_s = 0;  // medians of the counted steps
  // The tp2 run's (rank 0's log) medians over its counted steps of the step time (B x T /
  // tokens_per_s) and of the compute stream's wait in its tp all-reduces (compute_comm_s), and
  // the one over the other.
  double tp2_step_s = 0, tp2_compute_comm_s = 0, tp2_allreduce_share = 0;
  bool tp2_first = true;  // which of the two ran first
  double ratio() const { return tp2_tokens_per_s / tp1_tokens_per_s; }
};

struct TpResult {
  std::vector<TpRound> rounds;
  std::string tp2_command, tp1_command;
  std::vector<double> ratios() const;
  std::vector<double> allreduce_shares() const;
  const TpRound& median() const;   // the round with the median ratio (the upper of an even count)
  double allreduce_share() const;  // the median of allreduce_shares(), over the rounds
};

Result<TpResult> MeasureTpEfficiency(const Flags& f, const std::string& self,
                                     const std::string& mpirun, const std::string& dir);
// 6's JSON fields and table (after 5's); nothing when `tp` is nullptr.
void AddTpReport(const Flags& f, const TpResult* tp, nlohmann::ordered_json& out);
void PrintTpTable(const Flags& f, const TpResult* tp, std::FILE* stream);

// --- 7. Pipeline bubble and 8. schedule memory (bench_parallel_pp.cc) ---

// What a pipeline run's first line says of its stages (rank 0's `grid: ... | stages
// (--pp-partition auto): 0: blocks 1-3 + embedding 51.21 ms, 1: blocks 4-6 + head 52.04 ms per
// micro-batch; --schedule 1f1b, 8 micro-batches | ...`).
struct PpStages {
  std::string text;                 // "0: blocks 1-3 + embedding 51.21 ms, 1: ... 52.04 ms"
  std::vector<double> predicted_s;  // each stage's predicted time per micro-batch, in order
  double imbalance() const;         // the slowest stage's predicted time / their mean
};

// Parses the stages out of a pipeline run's stderr; Internal, quoting what it found, when there is
// no such line or a stage has no time.
Result<PpStages> ParsePpStages(const std::string& stderr_text);

struct PpRound {
  // The pp2 run (rank 0's log): medians over its counted steps of the step time (B x T /
  // tokens_per_s) and of compute_comm_s (stage 0's compute stream waiting in its activation
  // receives), and the stages its first line names.
  double pp2_step_s = 0, pp2_compute_comm_s = 0;
  PpStages stages;
  // The single-rank pair (Note [Pipeline bubble]): each process's median compute-queue busy time
  // per step, and the slower one's, T1.
  double pp1_compute_process_s[kRanks] = {};
  double pp1_compute_s = 0;
  bool pp2_first = true;  // which of the two ran first
  // T1 / P x (M + P - 1) / M: P stages splitting T1 evenly, with 1F1B's P - 1 idle slots.
  double ideal_step_s() const;
  double bubble() const { return pp2_step_s / ideal_step_s(); }  // pipeline_bubble
};

struct PpResult {
  std::vector<PpRound> rounds;
  std::string pp2_command, pp1_command;  // the latter: each process of the pair
  std::vector<double> bubbles() const;
  const PpRound& median() const;  // the round with the median bubble (the upper of an even count)
};

Result<PpResult> MeasurePipelineBubble(const Flags& f, const std::string& self,
                                       const std::string& mpirun, const std::string& dir);

// 8: one pp2 run per schedule, the peak of rank 0's (stage 0's) --log-json
// peak_bytes.activations over its steps.
struct ScheduleRun {
  uint64_t activation_bytes = 0;
  std::string command;
};
struct ScheduleMemory {
  ScheduleRun gpipe, one_f_one_b;
  int steps = 2;          // each run's
  double ratio() const {  // schedule_memory
    return double(gpipe.activation_bytes) / double(one_f_one_b.activation_bytes);
  }
};

Result<ScheduleMemory> MeasureScheduleMemory(const Flags& f, const std::string& self,
                                             const std::string& mpirun, const std::string& dir);
// 7 and 8's JSON fields and table (after 6's); a part that was skipped (nullptr) is left out.
void AddPpReport(const Flags& f, const PpResult* pp, const ScheduleMemory* memory,
                 nlohmann::ordered_json& out);
void PrintPpTable(const Flags& f, const PpResult* pp, const ScheduleMemory* memory,
                  std::FILE* stream);

// --- The report (bench_parallel_report.cc, bench_parallel_shard_report.cc) ---

// Fills `out` with what was measured (a part that was skipped is left out).
void AddReport(const Flags& f, const CollectivesResult* coll, const DpResult* dp,
               nlohmann::ordered_json& out);
// The table, on `stream`.
void PrintTable(const Flags& f, const CollectivesResult* coll, const DpResult* dp,
                std::FILE* stream);

// 3 and 4's part of the JSON object and of the table (after AddReport's and PrintTable's); a
// part that was skipped (nullptr) is left out.
void AddShardReport(const Flags& f, const ShardResult* shard, const OverlapResult* overlap,
                    nlohmann::ordered_json& out);
void PrintShardTable(const Flags& f, const ShardResult* shard, const OverlapResult* overlap,
                     std::FILE* stream);

// The median of `v` (the mean of the middle two of an even count); 0 for none.
double Median(std::vector<double> v);

// A size flag's bytes (the flags were checked before anything ran; 0 if one does not parse).
uint64_t FlagBytes(const std::string& text);
// The configuration every run of a sharded figure shares, as `<prefix>_model`, `_batch`, `_seq`,
// `_steps`, `_warmup_steps`, `_gpu_mem` and `_host_mem` (`host_mem`, the figure's budget).
void AddRunConfig(const std::string& prefix, const Flags& f, const std::string& host_mem,
                  nlohmann::ordered_json& out);

}  // namespace strata::bench::parallel_bench
