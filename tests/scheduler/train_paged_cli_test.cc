// `strata train` with paging flags, as a user runs it: the --log-json fields, the --trace file,
// and one clear line with the right exit code for budgets and flags that cannot work.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/scheduler/scheduler_test_util.h"
#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

std::vector<std::string> TinyArgs(int steps) {
  return {"train",     "--model", "tiny",
          "--batch",   "4",       "--seq",
          "64",        "--steps", std::to_string(steps),
          "--threads", "1",       "--page-size",
          "16K"};
}

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(TrainPagedCli, LogJsonReportsMovesOverlapAndPeaks) {
  ScratchDir dir("cli");
  const std::string log = dir.path() + "/log.jsonl", trace = dir.path() + "/trace.json";
  auto r = RunStrata(
      With(TinyArgs(2), {"--nvme-dir", dir.sub("nvme"), "--host-mem", "160K", "--params-on", "nvme",
                         "--optimizer-on", "nvme", "--log-json", log, "--trace", trace}),
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(ReadFileBytes(log));
  std::string line;
  int n = 0;
  uint64_t nvme_read = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    ++n;
    for (const char* k : {"step", "loss", "tokens_per_s", "overlap", "moved_bytes", "peak_bytes"}) {
      EXPECT_TRUE(j.contains(k)) << k << " missing in " << line;
    }
    for (const char* k : {"h2d", "d2h", "nvme_read", "nvme_write"}) {
      EXPECT_TRUE(j["moved_bytes"].contains(k)) << k;
    }
    for (const char* k : {"device", "host", "nvme"}) {
      EXPECT_TRUE(j["peak_bytes"].contains(k)) << k;
    }
    EXPECT_GT(j["moved_bytes"]["h2d"].get<uint64_t>(), 0u);
    EXPECT_LE(j["peak_bytes"]["host"].get<uint64_t>(), 160u * 1024);
    const double overlap = j["overlap"].get<double>();
    EXPECT_GE(overlap, 0.0);
    EXPECT_LE(overlap, 1.0);
    nvme_read += j["moved_bytes"]["nvme_read"].get<uint64_t>();
  }
  EXPECT_EQ(n, 2);
  EXPECT_GT(nvme_read, 0u);
  // The closing summary on stderr.
  EXPECT_NE(r.err.find("done: 2 steps in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("moved per step (mean) h2d "), std::string::npos) << r.err;

  // The trace: one named track per queue, slices with bytes on compute, h2d and d2h.
  auto t = nlohmann::json::parse(ReadFileBytes(trace));
  std::set<std::string> tracks;
  std::set<int> tids_with_slices;
  for (const auto& e : t.at("traceEvents")) {
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks.insert(e["args"]["name"]);
    if (e["ph"] == "X") {
      EXPECT_TRUE(e["args"].contains("bytes"));
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      tids_with_slices.insert(e["tid"].get<int>());
    }
  }
  EXPECT_TRUE(tracks.count("compute") && tracks.count("h2d") && tracks.count("d2h"));
  EXPECT_GE(tids_with_slices.size(), 5u);
}

// --init, --export-grads and --steps 0 give the in-memory trainer's bytes.
TEST(TrainPagedCli, InitExportAndGradsMatchTheInMemoryTrainer) {
  ScratchDir dir("cli_init");
  const std::string p = dir.path() + "/";
  ASSERT_EQ(
      RunStrata({"train", "--model", "tiny", "--steps", "0", "--export", p + "init.st"}, dir.path())
          .exit_code,
      0);
  auto zero = RunStrata(With(TinyArgs(0), {"--export", p + "init_paged.st"}), dir.path());
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_TRUE(ReadFileBytes(p + "init.st") == ReadFileBytes(p + "init_paged.st"));
  for (const char* engine : {"memory", "paged"}) {
    std::vector<std::string> args = {"train",
                                     "--init",
                                     p + "init.st",
                                     "--batch",
                                     "4",
                                     "--seq",
                                     "64",
                                     "--steps",
                                     "2",
                                     "--threads",
                                     "1",
                                     "--engine",
                                     engine,
                                     "--export",
                                     p + engine + ".st",
                                     "--export-grads",
                                     p + engine + ".grads.st"};
    if (std::string(engine) == "paged") args = With(args, {"--page-size", "8K"});
    auto r = RunStrata(args, dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_TRUE(ReadFileBytes(p + "memory.st") == ReadFileBytes(p + "paged.st"));
  EXPECT_TRUE(ReadFileBytes(p + "memory.grads.st") == ReadFileBytes(p + "paged.grads.st"));
}

TEST(TrainPagedCli, BudgetBelowTheWorkingSetIsRefusedWithTheNumber) {
  ScratchDir dir("cli_budget");
  auto r = RunStrata(With(TinyArgs(1), {"--gpu-mem", "1M", "--engine", "paged"}), dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string first = r.err.substr(0, r.err.find('\n'));
  EXPECT_EQ(first.rfind("strata: ", 0), 0u) << r.err;
  EXPECT_NE(first.find("--gpu-mem 1.00 MiB is below the"), std::string::npos) << first;
  EXPECT_NE(first.find("bytes)"), std::string::npos) << first;
}

// Issue 13: the chosen micro-batch order is the run's first line, with why.
TEST(TrainPagedCli, FirstLineNamesTheMicroBatchOrder) {
  ScratchDir dir("cli_order");
  const auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  auto forced = RunStrata(With(TinyArgs(1), {"--micro-batch", "2", "--recompute", "all",
                                             "--micro-batch-order", "layer-major"}),
                          dir.path());
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(first_line(forced.err).find("micro-batch order: layer-major"), std::string::npos)
      << forced.err;
  auto chosen = RunStrata(With(TinyArgs(1), {"--micro-batch", "2", "--engine", "paged"}),
                          dir.path());
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_NE(first_line(chosen.err).find("micro-batch order: "), std::string::npos) << chosen.err;
  auto none = RunStrata(With(TinyArgs(1), {"--micro-batch", "2", "--micro-batch-order",
                                           "layer-major"}),
                        dir.path());
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("--recompute all or auto"), std::string::npos) << none.err;
}

TEST(TrainPagedCli, BadPagingFlags) {
  ScratchDir dir("cli_flags");
  auto bad_choice = RunStrata(With(TinyArgs(1), {"--params-on", "gpu"}), dir.path());
  EXPECT_EQ(bad_choice.exit_code, 2) << bad_choice.err;
  EXPECT_NE(bad_choice.err.find("--params-on"), std::string::npos);
  auto no_nvme = RunStrata(With(TinyArgs(1), {"--optimizer-on", "nvme"}), dir.path());
  EXPECT_EQ(no_nvme.exit_code, 2) << no_nvme.err;
  EXPECT_NE(no_nvme.err.find("--nvme-dir"), std::string::npos);
  auto page = RunStrata(With(TinyArgs(1), {"--page-size", "5000"}), dir.path());
  EXPECT_EQ(page.exit_code, 2) << page.err;
  auto ckpt = RunStrata(With(TinyArgs(1), {"--ckpt-every", "1"}), dir.path());
  EXPECT_EQ(ckpt.exit_code, 2) << ckpt.err;
  // A store left by an earlier run that holds no checkpoint is started over (there is nothing to
  // resume: --resume would be refused); one that holds checkpoints is not reused without --resume.
  const std::string nvme = dir.sub("nvme");
  ASSERT_EQ(RunStrata(With(TinyArgs(1), {"--nvme-dir", nvme}), dir.path()).exit_code, 0);
  auto over = RunStrata(With(TinyArgs(1), {"--nvme-dir", nvme}), dir.path());
  EXPECT_EQ(over.exit_code, 0) << over.err;
  EXPECT_NE(over.err.find("starting it over"), std::string::npos) << over.err;
  const std::vector<std::string> ckpt_flags = {"--nvme-dir", nvme, "--ckpt-dir", dir.sub("ckpt"),
                                               "--ckpt-every", "1"};
  ASSERT_EQ(RunStrata(With(TinyArgs(1), ckpt_flags), dir.path()).exit_code, 0);
  auto again = RunStrata(With(TinyArgs(1), {"--nvme-dir", nvme}), dir.path());
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find("with the checkpoints of an earlier run"), std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("--resume"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace strata::testing
