// Helpers shared by the scheduler tests: scratch directories on the real disk, running a
// Trainer in-process and collecting what it reports.
#pragma once

#include "tests/common/scratch_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scheduler/trainer_factory.h"

namespace strata::testing {

using ::strata::test_support::ScratchDir;

inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TrainOutcome {
  Status status;
  std::vector<StepStats> steps;
  std::string weights;  // exported safetensors bytes
};

// Runs `o` to the end with --export into `export_path`.
inline TrainOutcome TrainInProcess(TrainOptions o, const std::string& export_path) {
  TrainOutcome out;
  o.outputs.export_path = export_path;
  auto trainer = CreateTrainer(o);
  if (!trainer.ok()) {
    out.status = trainer.status();
    return out;
  }
  out.status = (*trainer)->run([&](const StepStats& s) { out.steps.push_back(s); });
  out.weights = ReadFileBytes(export_path);
  return out;
}

// The small fixed-seed run every transparency test uses.
inline TrainOptions TinyRun(int steps = 4) {
  TrainOptions o;
  o.model.preset = "tiny";
  o.data.batch = 4;
  o.data.seq = 64;
  o.steps = steps;
  o.optimizer.lr = 1e-3f;
  o.seed = 7;
  o.threads = 2;
  return o;
}

}  // namespace strata::testing
