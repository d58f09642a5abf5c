// Helpers shared by the scheduler tests: scratch directories on the real disk, running a
// Trainer in-process and collecting what it reports.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scheduler/trainer.h"

namespace strata::testing {

// A fresh directory under $STRATA_TEST_TMPDIR, or /var/tmp (a real disk: the NVMe tier uses
// O_DIRECT), removed on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    const char* base = std::getenv("STRATA_TEST_TMPDIR");
    std::string tmpl =
        std::string(base != nullptr ? base : "/var/tmp") + "/strata-sched-" + tag + "-XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr) << "mkdtemp " << tmpl << ": " << std::strerror(errno);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directories(p);
    return p;
  }

 private:
  std::string path_;
};

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
  o.export_path = export_path;
  auto trainer = Trainer::Create(o);
  if (!trainer.ok()) {
    out.status = trainer.status();
    return out;
  }
  out.status = (*trainer)->Run([&](const StepStats& s) { out.steps.push_back(s); });
  out.weights = ReadFileBytes(export_path);
  return out;
}

// The small fixed-seed run every transparency test uses.
inline TrainOptions TinyRun(int steps = 4) {
  TrainOptions o;
  o.model.preset = "tiny";
  o.batch = 4;
  o.seq = 64;
  o.steps = steps;
  o.lr = 1e-3f;
  o.seed = 7;
  o.threads = 2;
  return o;
}

}  // namespace strata::testing
