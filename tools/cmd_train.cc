// `strata train`: parses flags into TrainOptions, runs the Trainer, prints progress on stderr
// and one JSON object per step to --log-json.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/util/log.h"
#include "core/util/sizes.h"
#include "scheduler/checkpoint.h"
#include "scheduler/trainer_factory.h"
#include "tools/command.h"
#include "tools/option_words.h"
#include "tools/output_paths.h"
#include "tools/resume_dirs.h"
#include "tools/step_log.h"
#include "tools/stop_signals.h"
#include "tools/train_flags.h"
#include "tools/train_ranks.h"

namespace strata::tools {
namespace {

Status CheckLogLevel(const std::string& level) {
  for (const char* known : {"debug", "info", "warn", "error", "off"}) {
    if (level == known) return Status::Ok();
  }
  return Status::InvalidArgument("--log-level must be debug, info, warn, error or off, got '" +
                                 level + "'");
}

// A step's progress on stderr: one line, two for the paged engine.
void PrintStep(const StepStats& s, long steps) {
  std::fprintf(stderr,
               "step %5ld/%ld | loss %.4f | lr %.2e | norm %.3f%s | %.0f tok/s | %.0f ms | "
               "device peak %s\n",
               s.step, steps, s.loss, s.lr, s.grad_norm, s.clipped ? " (clipped)" : "",
               s.tokens_per_s, s.step_s * 1e3, FormatBytes(s.device_peak_bytes).c_str());
  if (s.paged) {
    std::fprintf(stderr,
                 "           moved h2d %s d2h %s nvme read %s write %s | overlap %.0f%% | "
                 "peak host %s nvme %s\n",
                 FormatBytes(s.moved_bytes.h2d).c_str(), FormatBytes(s.moved_bytes.d2h).c_str(),
                 FormatBytes(s.moved_bytes.nvme_read).c_str(),
                 FormatBytes(s.moved_bytes.nvme_write).c_str(), s.overlap * 100,
                 FormatBytes(s.host_peak_bytes).c_str(), FormatBytes(s.nvme_peak_bytes).c_str());
  }
}

// The closing summary: what a whole run did (the first step, which warms up, is left out of
// the rate when there are more).
class RunSummary {
 public:
  explicit RunSummary(long steps) : steps_(steps) {}

  void add(const StepStats& s) {
    if (steps_run_++ == 0) first_loss_ = s.loss;
    last_loss_ = s.loss;
    last_elapsed_s_ = s.elapsed_s;
    if (steps_run_ > 1 || steps_ == 1) {
      timed_s_ += s.step_s;
      timed_tokens_ += s.tokens_per_s * s.step_s;
    }
    paged_ = s.paged;
    moved_sum_.h2d += s.moved_bytes.h2d;
    moved_sum_.d2h += s.moved_bytes.d2h;
    moved_sum_.nvme_read += s.moved_bytes.nvme_read;
    moved_sum_.nvme_write += s.moved_bytes.nvme_write;
    peak_device_ = std::max(peak_device_, s.device_peak_bytes);
    peak_host_ = std::max(peak_host_, s.host_peak_bytes);
    peak_nvme_ = std::max(peak_nvme_, s.nvme_peak_bytes);
  }

  // The `done:` line (and the paged engine's second line); nothing when no step ran.
  void print() const {
    if (steps_run_ == 0) return;
    const auto per_step = [&](uint64_t total) { return FormatBytes(total / uint64_t(steps_run_)); };
    std::fprintf(stderr, "done: %ld steps in %.1f s | %.0f tok/s%s | loss %.4f -> %.4f\n",
                 steps_run_, last_elapsed_s_, timed_s_ > 0 ? timed_tokens_ / timed_s_ : 0.0,
                 steps_run_ > 1 ? " after step 1" : "", first_loss_, last_loss_);
    if (!paged_) return;
    std::fprintf(stderr,
                 "      moved per step (mean) h2d %s d2h %s nvme read %s write %s | peak device "
                 "%s host %s nvme %s\n",
                 per_step(moved_sum_.h2d).c_str(), per_step(moved_sum_.d2h).c_str(),
                 per_step(moved_sum_.nvme_read).c_str(), per_step(moved_sum_.nvme_write).c_str(),
                 FormatBytes(peak_device_).c_str(), FormatBytes(peak_host_).c_str(),
                 FormatBytes(peak_nvme_).c_str());
  }

 private:
  const long steps_;  // --steps
  long steps_run_ = 0;
  double timed_s_ = 0, timed_tokens_ = 0, last_elapsed_s_ = 0;
  float first_loss_ = 0, last_loss_ = 0;
  StepStats::Moved moved_sum_;
  bool paged_ = false;
  uint64_t peak_device_ = 0, peak_host_ = 0, peak_nvme_ = 0;
};

// What was saved when a stop came after `last_step`: the checkpoint the paged trainer wrote
// for it (Note [Stopping after a step]: for a stop before the last step, or the interval's), or
// nothing.
std::string SavedAfterStop(const TrainOptions& o, long last_step, long start_step) {
  if (last_step == start_step) return "nothing new saved";
  const bool checkpoints = o.checkpoints.every > 0 && !o.checkpoints.dir.empty();
  if (checkpoints && (last_step < o.steps || last_step % o.checkpoints.every == 0)) {
    return "checkpoint " + scheduler::ManifestNameForStep(last_step) + " written to " +
           o.checkpoints.dir + "; resume with --resume";
  }
  return checkpoints ? "no checkpoint of this step"
                     : "no checkpoint (checkpoints need --nvme-dir, --ckpt-dir and --ckpt-every)";
}

// The run, from a created trainer: progress, --log-json, the summary or the stop line. Only
// rank 0 prints progress and the summary (`print`).
Status RunSteps(Trainer& trainer, const TrainOptions& o, StepLog* log, bool print,
                CommandContext& ctx) {
  RunSummary summary(o.steps);
  long last_step = trainer.start_step();
  Status log_status;
  STRATA_RETURN_IF_ERROR(trainer.run([&](const StepStats& s) {
    last_step = s.step;
    summary.add(s);
    if (print) PrintStep(s, o.steps);
    if (log == nullptr || !log_status.ok()) return;
    log_status = log->write(s);
    if (!log_status.ok()) RequestStop(-1);  // a failed log fails the run, after this step
  }));
  if (!log_status.ok()) {
    return log_status.with_context("stopped after step " + std::to_string(last_step) + " (" +
                                  SavedAfterStop(o, last_step, trainer.start_step()) + ")");
  }
  // A signal during the last step or after it stopped nothing: the run is complete.
  if (const int signo = StopSignalNumber(); signo != 0 && last_step < o.steps) {
    std::fprintf(stderr, "strata: stopped by %s after step %ld of %ld; %s\n",
                 StopSignalName(signo), last_step, o.steps,
                 SavedAfterStop(o, last_step, trainer.start_step()).c_str());
    ctx.stop_signal = signo;
    return Status::Ok();
  }
  if (print) summary.print();
  return Status::Ok();
}

// Everything that can be checked is checked before the trainer is created (nothing read,
// planned or allocated yet), and --log-json is opened only after it was (a refused run, e.g.
// one whose NVMe store another process holds, leaves an existing log alone).
Status RunTrainOnRanks(TrainFlags& f, CommandContext& ctx, const TrainRanks& ranks) {
  STRATA_RETURN_IF_ERROR(CheckCkptDirForJob(f.o, ranks.size));
  STRATA_RETURN_IF_ERROR(ApplyRankOutputs(f.o, ranks.comm.get(), ranks.rank, ranks.size));
  STRATA_RETURN_IF_ERROR(CheckTrainOutputs(f.o, ranks.rank == 0 ? f.log_json : ""));
  f.o.stop_signal = InstallStopSignals();
  const TrainOptions& o = f.o;
  STRATA_ASSIGN_OR_RETURN(auto trainer, CreateTrainer(o));
  std::unique_ptr<StepLog> log;
  if (!f.log_json.empty() && ranks.rank == 0) {
    STRATA_ASSIGN_OR_RETURN(log,
                            StepLog::Open(f.log_json, o.checkpoints.resume, trainer->start_step()));
  }
  Logger("train")->info("model {} | data {} | batch {} x seq {} | {} steps",
                        trainer->shape().description, trainer->data_name(), o.data.batch,
                        trainer->seq(), o.steps);
  return RunSteps(*trainer, o, log.get(), ranks.rank == 0, ctx);
}

// The disk faults a parent armed for this run (stress/fault_spec.h): `strata stress` and tests set
// STRATA_INJECT_FAULTS; the product's flags have none. The one place the variable is read.
std::string InjectFaultsSpec() {
  const char* spec = std::getenv(stress::kInjectFaultsVariable);
  return spec == nullptr ? "" : spec;
}

// The job's ranks first (tools/train_ranks.h); a rank that fails in a job of several prints its
// error and ends the job, so that its peers do not wait on it.
Status RunTrain(TrainFlags& f, const CLI::App& cmd, CommandContext& ctx) {
  STRATA_RETURN_IF_ERROR(CheckLogLevel(f.log_level));
  SetLogLevel(f.log_level);
  STRATA_RETURN_IF_ERROR(ApplyFlags(f, cmd));
  STRATA_RETURN_IF_ERROR(f.faults.arm(InjectFaultsSpec(), &f.o));
  STRATA_ASSIGN_OR_RETURN(TrainRanks ranks, OpenTrainRanks(f.o));
  if (ranks.rank != 0 && (f.log_level == "info" || f.log_level == "debug")) SetLogLevel("warn");
  Status s = RunTrainOnRanks(f, ctx, ranks);
  if (s.ok() || ranks.size == 1) return s;
  const FailedRankEnd end = AgreeOnFailure(ranks, s);
  const std::string rank_text =
      "rank " + std::to_string(ranks.rank) + " of " + std::to_string(ranks.size);
  if (!end.in_order) {
    std::fprintf(stderr, "strata: error: %s: %s\n", rank_text.c_str(),
                 InFlagTerms(s.message()).c_str());
    std::fflush(stderr);
    ranks.comm->abort(ExitCodeFor(s));
  }
  // Every rank refused the run: rank 0 says it for all (Note [Ending a failed job]).
  if (!end.say) ctx.error_said = true;
  if (end.say && ranks.rank != 0) return s.with_context(rank_text);
  return s;
}


}  // namespace

void AddTrainCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train a GPT-2-architecture model.\n"
      "Data: --data builtin (a generated English-like corpus, byte-level, the default), a text\n"
      "file (one token per byte, vocab 256) or an llm.c/nanoGPT token file (.bin: 256 int32\n"
      "header with magic 20240520, then uint16 tokens). Step k row i reads the window starting\n"
      "at token ((k*B + i) * T) mod (N - T - 1).");
  AddTrainFlags(cmd, flags.get());
  cmd->callback([flags, cmd, &ctx] { ctx.status = RunTrain(*flags, *cmd, ctx); });
}

}  // namespace strata::tools
