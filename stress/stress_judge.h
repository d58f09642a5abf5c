// How `strata stress` judges what its child training runs did: pure functions over texts, so
// that the judging itself is unit-tested (tests/tools/stress_judge_test.cc) and the soak cannot
// pass vacuously.
//
// Note [Stress outcomes]
// A configuration is run once in memory (the reference) and then paged, through one or more
// attempts in the same --nvme-dir/--ckpt-dir, each killed, faulted or left alone, each one after
// the first with --resume. It is judged on three things:
// - every step that any attempt logged (--log-json, lines cut by a kill skipped) has the
//   reference's loss text for that step, byte for byte (a resumed attempt redoes the steps after
//   its checkpoint: they must be the same too);
// - the attempts together logged every step 1..steps, and the last one finished (exit 0);
// - the weights it exported are the reference's, byte for byte.
// A loss or weight that differs is a mismatch; a run that cannot finish or a step that no
// attempt logged is data lost. How each attempt ended is judged separately (ClassifyExit).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace strata::stress {

// step -> the text of its "loss" value, from the contents of a --log-json file; lines that do
// not parse (cut by a kill) are skipped.
std::map<long, std::string> LossTexts(std::string_view jsonl);

struct StressJudgement {
  int mismatches = 0;      // loss values and weight files that differ from the reference
  bool data_lost = false;  // the run did not finish, or some step was never logged
  std::vector<std::string> problems;  // one line each, for the failure report
};

// `attempts`: each attempt's LossTexts, in order. `finished`: the last attempt exited 0.
// `weights` / `ref_weights`: the exported safetensors bytes (compared only when finished).
StressJudgement JudgeConfiguration(const std::map<long, std::string>& reference,
                                   const std::vector<std::map<long, std::string>>& attempts,
                                   long steps, bool finished, const std::string& ref_weights,
                                   const std::string& weights);

// How one child process ended, as the parent saw it.
struct ChildExit {
  bool exited = false;   // false: ended by a signal
  int code = 0;          // exit code, when exited
  int signal = 0;        // the signal, when not exited
  bool timed_out = false;  // the parent killed it after its time limit (a hang)
};

enum class ExitKind {
  kFinished,     // exit 0
  kCleanError,   // exit 1 with exactly one `strata: error:` line and no crash text (an
                 // assertion's, an abort's, a sanitizer's)
  kStoppedByUs,  // ended by the signal we sent, or 128 + that signal (a graceful SIGTERM stop)
  kFailure,      // anything else: a crash, an abort, a signal we did not send, a hang, exit 2
};

// `sent_signal`: the signal the parent sent (0: none). `stderr_text`: everything the child wrote
// on stderr. `error_line` receives the `strata: error: ...` line, if there is one.
ExitKind ClassifyExit(const ChildExit& how, int sent_signal, std::string_view stderr_text,
                      std::string* error_line);

// The `strata: inject-faults: N requests failed` count in a child's stderr; -1 when absent.
long InjectedCount(std::string_view stderr_text);

// The STEP of `--resume-from STEP` suggested in an error line; -1 when there is none.
long SuggestedResumeStep(std::string_view error_line);

// Whether an error line carries ENOSPC's text, as a run stopped by a full disk must (a disk
// fill's attempt passes with ClassifyExit's kCleanError and this; Note [Disk fills] in
// stress_damage.cc).
bool NamesDiskFull(std::string_view error_line);

// A resume as 2 ranks over a one-process run's directories (stress/stress_rank_change.h): "" when
// it exited 2 with one `strata: error:` line naming a one-process run and `made_rank_dirs` is
// false; else what was wrong.
std::string RankChangeProblem(const ChildExit& how, std::string_view output, bool made_rank_dirs);

}  // namespace strata::stress
