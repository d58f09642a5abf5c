// The disturbances of a stress configuration that damage its store or its job: a flipped byte in
// a checkpoint, a full disk, a resume as another number of ranks (stress/stress_scenario.h).
#include <algorithm>
#include <filesystem>
#include <string>

#include "scheduler/checkpoint.h"
#include "stress/stress_config_run.h"
#include "stress/stress_judge.h"
#include "stress/stress_rank_change.h"

namespace strata::stress {

// Note [Disk fills]
// A configuration that draws a disk fill keeps its store (--nvme-dir) and its --ckpt-dir on an
// ext4 image of its own (StressDisk, kDiskBytes: several times the largest store a drawn
// configuration makes, with the catalog's 16 MiB headroom), mounted for the whole
// configuration so that every attempt opens the same store. The fill is the first attempt's
// disturbance (DrawDisturbances), once a number of steps drawn below the run's last checkpoint
// are logged (none: before the store is even open); the driver then takes every free byte while
// the child trains, so whichever write comes next (the catalog's log, a checkpoint record)
// meets ENOSPC. The attempt must stop with
// exit 1 and one error line with ENOSPC's text, never abort (Note [Poisoned catalog] in
// storage/catalog.cc), or finish if it needed no new block. The space is freed before anything
// else touches the store; the next attempt resumes, and the configuration is judged like any
// other: every step's loss and the weights as the in-memory run's. The logs, token file and
// exports stay off the small disk. The image is unmounted and detached when the configuration
// ends; a failed one keeps it (disk.img) with the rest of its files.

// A flipped byte in the newest checkpoint: the next attempt must name the checksum error, and
// the older checkpoint it suggests must recover the run.
Status ConfigRun::rot() {
  if (resume_from_ >= 0) {  // the next attempt goes back to an older checkpoint anyway
    events_.push_back("rot n/a");
    return Status::Ok();
  }
  Result<RottedPage> rot = RotNewestCheckpoint(NvmeDirs(c_, store_root_), c_.page_bytes, rng_());
  if (!rot.ok()) {
    if (rot.status().code() != StatusCode::kNotFound) return rot.status();
    events_.push_back("rot n/a");
    return Status::Ok();
  }
  rotted_.push_back(*rot);
  ++n_.faults_injected;
  ++pending_;
  const std::string what = "rot " + rot->manifest + " page " + std::to_string(rot->page);
  STRATA_ASSIGN_OR_RETURN(ChildRun run, run_paged("", StopPlan{}));
  std::string line;
  const ExitKind kind = ClassifyExit(run.how, 0, run.output, &line);
  attempts_.back().outcome += line.empty() ? "" : ": " + line;
  if (kind == ExitKind::kCleanError && NamesChecksumError(line)) {
    ++n_.faults_detected;
    resume_from_ = SuggestedResumeStep(line);
    events_.push_back(what + " detected");
  } else if (kind == ExitKind::kFinished) {
    finished_ = true;  // it resumed from another checkpoint; the losses say whether that was right
    events_.push_back(what + " not read");
  } else {
    events_.push_back(what + " FAILED");
    fail(what + " (" + rot->path + " offset " + std::to_string(rot->offset) +
         "): expected exit 1 naming the checksum error, got " + DescribeExit(run) +
         (line.empty() ? "" : ": " + line));
  }
  return Status::Ok();
}

// Note [Disk fills]: the disk fills at a drawn moment, and is freed as soon as the attempt has
// ended.
Status ConfigRun::fill_disk() {
  if (!disk_) {
    events_.push_back("fill n/a");
    return Status::Ok();
  }
  // Before the run's last checkpoint, so that a write is still to come (the attempt may have
  // resumed from an earlier one: then sooner still); 0 steps: before the store is open.
  StopPlan stop;
  const long last_checkpoint = c_.steps / c_.ckpt_every * c_.ckpt_every;
  stop.after_steps = Uniform(rng_, 0, std::max(0L, last_checkpoint - max_logged_ - 1));
  Status filled;
  stop.action = [&] { filled = disk_->fill().status(); };
  STRATA_ASSIGN_OR_RETURN(ChildRun run, run_paged("", stop));
  STRATA_RETURN_IF_ERROR(disk_->unfill());
  STRATA_RETURN_IF_ERROR(filled);
  judge_fill(run, run.signal_sent);
  return Status::Ok();
}

// Exit 1 with ENOSPC's text, or a finished run; anything else (an abort above all) fails.
void ConfigRun::judge_fill(const ChildRun& run, bool filled) {
  std::string line;
  const ExitKind kind = ClassifyExit(run.how, 0, run.output, &line);
  attempts_.back().outcome += line.empty() ? "" : ": " + line;
  n_.disk_fills += filled ? 1 : 0;
  if (kind == ExitKind::kCleanError && NamesDiskFull(line)) {
    ++n_.faults_injected;
    ++n_.faults_detected;
    ++pending_;
    events_.push_back("disk fill after " + std::to_string(losses_.back().size()) +
                      " steps detected");
  } else if (kind == ExitKind::kFinished) {
    finished_ = true;
    n_.faults_injected += filled ? 1 : 0;
    pending_ += filled ? 1 : 0;
    events_.push_back(filled ? "disk fill absorbed" : "disk fill too late");
  } else {
    events_.push_back("disk fill FAILED");
    fail(std::string("disk fill") + (filled ? "" : " (never reached)") +
         ": expected exit 1 with ENOSPC's message (No space left on device) or a finished "
         "run, got " +
         DescribeExit(run) + (line.empty() ? "" : ": " + line));
  }
}

// A resume as 2 ranks over this one-process run's directories: refused, nothing touched; the
// next attempt resumes as before (stress/stress_rank_change.h).
Status ConfigRun::change_ranks() {
  Result<std::optional<scheduler::CheckpointRecord>> record =
      scheduler::ReadCheckpointRecord(CkptDir(store_root_));
  if (!record.ok() || !*record) {  // nothing written yet, or damaged on purpose
    events_.push_back("2 ranks n/a");
    return Status::Ok();
  }
  const std::string tag = dir_ + "/attempt" + std::to_string(attempts_.size() + 1);
  STRATA_ASSIGN_OR_RETURN(
      RankChangeRun r,
      ResumeUnderTwoRanks(o_.mpirun, o_.binary, paged_, CkptDir(store_root_),
                          NvmeDirs(c_, store_root_), tag + ".out", o_.child_timeout_s));
  attempts_.push_back({r.command, r.outcome});
  losses_.push_back({});
  if (r.problem.empty()) {
    ++n_.rank_changes;
    events_.push_back("2 ranks refused");
  } else {
    events_.push_back("2 ranks FAILED");
    fail(r.problem);
  }
  return Status::Ok();
}

}  // namespace strata::stress
