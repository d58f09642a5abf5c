#include "stress/stress_scenario.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "core/util/log_words.h"
#include "core/util/sizes.h"
#include "scheduler/checkpoint.h"
#include "stress/stress_child.h"
#include "stress/stress_config_run.h"
#include "stress/stress_disk.h"
#include "stress/stress_disturbance.h"
#include "stress/stress_judge.h"
#include "stress/stress_pages.h"
#include "stress/stress_rank_change.h"

namespace strata::stress {
namespace {

bool ContainsAny(const std::string& text, const std::vector<std::string>& needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](const std::string& n) { return text.find(n) != std::string::npos; });
}

// Whether the record in `ckpt_dir` lists a checkpoint: what --resume needs. A record that does
// not read (damaged on purpose) counts, so that the attempt meets the damage.
bool HoldsCheckpoint(const std::string& ckpt_dir) {
  Result<std::optional<scheduler::CheckpointRecord>> record =
      scheduler::ReadCheckpointRecord(ckpt_dir);
  return !record.ok() || (*record && !(*record)->checkpoints.empty());
}

// The text of a float flag scaled by 1.001 (sabotage: the same run, not the same bits).
std::string Perturbed(const std::string& value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", std::stod(value) * 1.001);
  return buf;
}

}  // namespace

bool NamesChecksumError(const std::string& line) {
  return ContainsAny(line, {"checksum", "Corruption", "corrupt"});
}

std::string DescribeExit(const ChildRun& run) {
  if (run.how.timed_out) return "hung: killed after " + std::to_string(int(run.wall_s)) + " s";
  if (!run.how.exited) return "ended by signal " + std::to_string(run.how.signal);
  return "exit " + std::to_string(run.how.code);
}

Status ConfigRun::prepare(const std::vector<Disturbance>& draws) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::IoError("cannot create " + dir_ + ": " + ec.message());
  store_root_ = dir_;
  if (std::any_of(draws.begin(), draws.end(), [](const Disturbance& d) { return d.fill; })) {
    Result<std::unique_ptr<StressDisk>> disk = StressDisk::Mount(dir_, kDiskBytes);
    if (disk.ok()) {
      disk_ = std::move(disk).value();
      store_root_ = disk_->path();
      used_disk_ = true;
    } else {
      events_.push_back("no disk for the fill (" + InLogTerms(disk.status().message()) + ")");
    }
  }
  for (const std::string& d : NvmeDirs(c_, store_root_)) {
    std::filesystem::create_directories(d, ec);
  }
  if (ec) return Status::IoError("cannot create " + store_root_ + ": " + ec.message());
  data_ = dir_ + "/tokens.bin";
  if (!c_.builtin_data) STRATA_RETURN_IF_ERROR(WriteTokenFile(c_, data_));
  StressConfig paged = c_;
  if (o_.sabotage == "lr") paged.lr = Perturbed(c_.lr);
  paged_ = CommonArgs(paged, data_);
  for (std::string& a : PagingArgs(c_, store_root_)) paged_.push_back(std::move(a));
  return Status::Ok();
}

// The same flags in memory: every byte of state on the device, no paging flag, no fault.
Status ConfigRun::run_reference() {
  std::vector<std::string> args = CommonArgs(c_, data_);
  for (const std::string& a :
       {std::string("--engine"), std::string("memory"), std::string("--log-json"),
        dir_ + "/reference.jsonl", std::string("--export"), dir_ + "/reference.safetensors"}) {
    args.push_back(a);
  }
  ref_command_ = CommandLine(o_.binary, args);
  STRATA_ASSIGN_OR_RETURN(ChildRun run, RunChild(o_.binary, args, "", dir_ + "/reference.out",
                                                 StopPlan{}, o_.child_timeout_s));
  std::string line;
  if (ClassifyExit(run.how, 0, run.output, &line) != ExitKind::kFinished) {
    fail("the in-memory reference run failed (" + DescribeExit(run) + "): " + line);
    return Status::Ok();
  }
  ref_losses_ = LossTexts(ReadFileText(dir_ + "/reference.jsonl"));
  ref_weights_ = ReadFileText(dir_ + "/reference.safetensors");
  return Status::Ok();
}

// One paged attempt: --resume after the first (or the --resume-from an error suggested), its own
// --log-json, the shared --export.
Result<ChildRun> ConfigRun::run_paged(const std::string& fault_spec, StopPlan stop) {
  const std::string tag = dir_ + "/attempt" + std::to_string(attempts_.size() + 1);
  std::vector<std::string> args = paged_;
  if (resume_from_ >= 0) {  // an older checkpoint than a damaged newest: it goes
    for (const std::string& a :
         {std::string("--resume-from"), std::to_string(resume_from_), std::string("--discard-newer")}) {
      args.push_back(a);
    }
    resume_from_ = -1;
  } else if (HoldsCheckpoint(CkptDir(store_root_))) {  // --resume is refused where there is none
    args.push_back("--resume");
  }
  for (const std::string& a : {std::string("--log-json"), tag + ".jsonl", std::string("--export"),
                               dir_ + "/paged.safetensors"}) {
    args.push_back(a);
  }
  stop.log_path = tag + ".jsonl";
  attempts_.push_back({CommandLine(o_.binary, args, fault_spec), ""});
  STRATA_ASSIGN_OR_RETURN(ChildRun run, RunChild(o_.binary, args, fault_spec, tag + ".out", stop,
                                                 o_.child_timeout_s));
  losses_.push_back(LossTexts(ReadFileText(tag + ".jsonl")));
  const std::map<long, std::string>& got = losses_.back();
  if (!got.empty()) {
    max_logged_ = std::max(max_logged_, got.rbegin()->first);
    if (got.begin()->first > 1) ++n_.resumes;
  }
  attempts_.back().outcome = DescribeExit(run);
  return run;
}

bool ConfigRun::still_rotted(const std::string& error_line) const {
  return !rotted_.empty() && NamesChecksumError(error_line) && SuggestedResumeStep(error_line) >= 0;
}

void ConfigRun::fail(const std::string& problem) {
  ++n_.failures;
  problems_.push_back(problem);
  stop_events_ = true;
}

StopPlan ConfigRun::draw_stop(int signal) {
  StopPlan stop;
  stop.signal = signal;
  if (signal == 0) return stop;
  // Mostly after a checkpoint, so that the next attempt resumes from one.
  const long remaining = std::max(1L, c_.steps - max_logged_);
  const long lo = Uniform(rng_, 0, 3) > 0 && c_.ckpt_every < remaining ? c_.ckpt_every : 0;
  stop.after_steps = Uniform(rng_, lo, remaining - 1);
  stop.delay_ms = int(Uniform(rng_, 0, 30));
  return stop;
}

// One disturbed attempt. It must end by the signal we sent (or exit 128 + it after a graceful
// stop), finish, or stop with exit 1 and one error line naming its fault.
Status ConfigRun::disturb(const Disturbance& d) {
  if (d.rot) return rot();
  if (d.fill) return fill_disk();
  if (d.rank_change) return change_ranks();
  const std::string fault_spec = d.fault ? d.fault->spec : "";
  STRATA_ASSIGN_OR_RETURN(ChildRun run, run_paged(fault_spec, draw_stop(d.signal)));
  judge(d, run);
  return Status::Ok();
}

void ConfigRun::judge(const Disturbance& d, const ChildRun& run) {
  std::string line;
  const ExitKind kind = ClassifyExit(run.how, d.signal, run.output, &line);
  attempts_.back().outcome += line.empty() ? "" : ": " + line;
  const std::string sig = d.signal == SIGKILL ? "SIGKILL" : "SIGTERM";
  std::string what = d.fault ? d.fault->spec : "";
  if (d.signal != 0) what += (what.empty() ? "" : "+") + sig;
  const bool detected = kind == ExitKind::kCleanError && d.fault && !d.fault->timing_only &&
                        ContainsAny(line, d.fault->error_texts);
  const bool hit = detected || InjectedCount(run.output) > 0 ||
                   (d.fault && d.fault->timing_only && kind == ExitKind::kFinished);
  n_.faults_injected += hit ? 1 : 0;
  n_.faults_detected += detected ? 1 : 0;
  pending_ += hit ? 1 : 0;
  if (kind == ExitKind::kStoppedByUs) {
    ++n_.kills;
    events_.push_back(what + " after " + std::to_string(losses_.back().size()) + " steps");
  } else if (kind == ExitKind::kFinished) {
    finished_ = true;
    events_.push_back(what + (d.fault ? (hit ? " absorbed" : " not hit") : " too late"));
  } else if (detected) {
    events_.push_back(what + " detected");
  } else if (kind == ExitKind::kCleanError && still_rotted(line)) {
    // A checkpoint flipped earlier is still the newest listed one (the attempt that resumed from
    // an older one stopped before its next checkpoint): the same error and advice again.
    resume_from_ = SuggestedResumeStep(line);
    events_.push_back(what + " met the rotted checkpoint again");
  } else {
    events_.push_back(what + " FAILED");
    fail(what + ": expected a finished run, the signal's end, or exit 1 naming the fault; got " +
         DescribeExit(run) + (line.empty() ? "" : ": " + line));
  }
}

// Undisturbed attempts until the run is complete: one, or one more when an error suggests an
// older checkpoint (--resume-from).
Status ConfigRun::finish_run() {
  for (int tries = 0; !finished_ && n_.failures == 0 && tries < 3; ++tries) {
    STRATA_ASSIGN_OR_RETURN(ChildRun run, run_paged("", StopPlan{}));
    std::string line;
    const ExitKind kind = ClassifyExit(run.how, 0, run.output, &line);
    attempts_.back().outcome += line.empty() ? "" : ": " + line;
    if (kind == ExitKind::kFinished) {
      finished_ = true;
    } else if (kind == ExitKind::kCleanError && SuggestedResumeStep(line) >= 0) {
      resume_from_ = SuggestedResumeStep(line);
    } else {
      problems_.push_back("the undisturbed attempt did not finish: " + DescribeExit(run) +
                          (line.empty() ? "" : ": " + line));
      if (kind == ExitKind::kFailure) ++n_.failures;
      break;
    }
  }
  return Status::Ok();
}

void ConfigRun::verdict() {
  std::string weights = ReadFileText(dir_ + "/paged.safetensors");
  if (o_.sabotage == "weights" && !weights.empty()) weights[weights.size() / 2] ^= 0x01;
  const StressJudgement j =
      JudgeConfiguration(ref_losses_, losses_, c_.steps, finished_, ref_weights_, weights);
  n_.mismatches += j.mismatches;
  problems_.insert(problems_.end(), j.problems.begin(), j.problems.end());
  bool lost = j.data_lost;
  if (finished_) {
    Result<uint64_t> verified =
        VerifyCheckpointPages(NvmeDirs(c_, store_root_), c_.page_bytes, rotted_);
    if (verified.ok()) {
      n_.pages_verified += long(*verified);
    } else if (verified.status().code() != StatusCode::kNotFound) {
      lost = true;
      problems_.push_back("a checkpoint page does not verify: " + verified.status().to_string());
    }
  }
  n_.data_lost += lost ? 1 : 0;
  if (!lost && j.mismatches == 0 && n_.failures == 0) n_.faults_recovered += pending_;
}

StressConfigResult ConfigRun::outcome() const {
  StressConfigResult r;
  r.passed = n_.failures == 0 && n_.data_lost == 0 && n_.mismatches == 0;
  std::string events;
  for (const std::string& e : events_) events += (events.empty() ? "" : ", ") + e;
  r.progress = "config " + std::to_string(c_.index) + ": " + Describe(c_) + " | " + events + " | " +
               (r.passed ? "ok" : "FAILED");
  if (r.passed) return r;
  r.report = "configuration " + std::to_string(c_.index) + ": " + Describe(c_) +
             "\n  reference: " + ref_command_ + "\n";
  for (size_t i = 0; i < attempts_.size(); ++i) {
    r.report += "  attempt " + std::to_string(i + 1) + ": " + attempts_[i].command + "\n    -> " +
                attempts_[i].outcome + "\n";
  }
  for (const std::string& p : problems_) r.report += "  problem: " + p + "\n";
  r.report += "  files kept in " + dir_ +
              (used_disk_ ? " (the store and checkpoints in its disk.img: mount -o loop)" : "") +
              "\n";
  return r;
}

Result<StressConfigResult> ConfigRun::run(StressCounters* counters) {
  const std::vector<Disturbance> draws =
      DrawDisturbances(rng_, o_.fill_odds, o_.rank_change_odds);
  STRATA_RETURN_IF_ERROR(prepare(draws));
  STRATA_RETURN_IF_ERROR(run_reference());
  if (n_.failures == 0) {
    for (const Disturbance& d : draws) {
      if (finished_ || stop_events_ || std::chrono::steady_clock::now() > o_.deadline) break;
      STRATA_RETURN_IF_ERROR(disturb(d));
    }
    STRATA_RETURN_IF_ERROR(finish_run());
    verdict();
  }
  n_.configurations = 1;
  disk_.reset();  // unmounted and detached, passed or not
  StressConfigResult r = outcome();
  counters->add(n_);
  if (r.passed) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  return r;
}

void StressCounters::add(const StressCounters& o) {
  configurations += o.configurations;
  skipped += o.skipped;
  faults_injected += o.faults_injected;
  faults_detected += o.faults_detected;
  faults_recovered += o.faults_recovered;
  kills += o.kills;
  disk_fills += o.disk_fills;
  rank_changes += o.rank_changes;
  resumes += o.resumes;
  pages_verified += o.pages_verified;
  data_lost += o.data_lost;
  mismatches += o.mismatches;
  failures += o.failures;
}

Result<StressConfigResult> RunStressConfiguration(const StressConfig& c,
                                                  const StressRunOptions& options,
                                                  StressCounters* counters) {
  if (Status plan = CheckPagedPlan(c); !plan.ok()) {
    StressConfigResult r;
    r.passed = r.skipped = true;
    r.progress =
        "config " + std::to_string(c.index) + ": skipped (" + InLogTerms(plan.message()) + ")";
    ++counters->skipped;
    return r;
  }
  ConfigRun run(c, options);
  return run.run(counters);
}

}  // namespace strata::stress
