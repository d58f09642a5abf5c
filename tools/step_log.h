// --log-json: one JSON object per step, one line each, written as the step ends.
//
// - Opened only after the trainer was created: a run refused for any reason (bad flags, a store
//   another process holds locked) never touches an existing log.
// - A fresh run truncates the file. A resumed run (--resume) keeps the earlier run's lines of
//   steps 1 .. start_step and continues after them: a killed run may have logged steps past its
//   last checkpoint, which the resumed run trains again, so those lines (and a line cut by the
//   kill) are dropped, by writing the kept lines to a temporary file beside it and renaming it
//   over the log (the old log survives a crash in between).
// - Every line is written with write(2) right away (a killed run keeps its steps) and checked: a
//   failed write (a full disk, /dev/full) is an error naming the file.
//
// Threads: one thread at a time (the trainer calls on_step on the thread that called Run).
#pragma once

#include <memory>
#include <string>

#include "core/util/status.h"
#include "scheduler/trainer.h"

namespace strata::tools {

class StepLog {
 public:
  // `resume`: --resume was given; `start_step`: the step the trainer continues after.
  static Result<std::unique_ptr<StepLog>> Open(const std::string& path, bool resume,
                                               long start_step);
  ~StepLog();
  StepLog(const StepLog&) = delete;
  StepLog& operator=(const StepLog&) = delete;

  // Appends the step's line; an OS error names the file and the step.
  Status write(const StepStats& s);
  const std::string& path() const { return path_; }

 private:
  StepLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

// The step's JSON object, without the newline (field names: README, --log-json).
std::string StepJson(const StepStats& s);

}  // namespace strata::tools
