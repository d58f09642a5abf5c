// Issue 12, finding 5: what `strata train` writes. Output paths are checked before step 1 and
// can never be an input; --log-json is opened only once the run is sure to start, keeps a
// resumed run's history, and a failed write fails the run.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

class TrainOutputs : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  RunResult Train(std::vector<std::string> extra) {
    std::vector<std::string> args = {"train",     "--model", "tiny",  "--batch", "2",
                                     "--threads", "1",       "--seq", "32"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunStrata(args, dir_);
  }

  // A paged run with checkpoints every step in nvme/ and ckpt/ under the scratch dir.
  std::vector<std::string> Paged(long steps) {
    std::filesystem::create_directories(Path("nvme"));
    return {"--steps",    std::to_string(steps), "--page-size", "16K",          "--nvme-dir",
            Path("nvme"), "--ckpt-dir",          Path("ckpt"),  "--ckpt-every", "1"};
  }

  // step -> the line, for every line of a --log-json file (each must parse as a step line).
  static std::map<long, std::string> Steps(const std::string& path) {
    std::map<long, std::string> out;
    std::istringstream lines(ReadWholeFile(path));
    std::string line;
    while (std::getline(lines, line)) {
      EXPECT_EQ(line.rfind("{\"step\":", 0), 0u) << line;
      const long step = std::stol(line.substr(8));
      EXPECT_EQ(out.count(step), 0u) << "step " << step << " twice";
      out[step] = line;
    }
    return out;
  }

  static std::string Loss(const std::string& line) {
    const auto pos = line.find("\"loss\":");
    return line.substr(pos, line.find(',', pos) - pos);
  }

  ScratchDir scratch_{"outputs"};
  const std::string dir_ = scratch_.path();
};

TEST_F(TrainOutputs, LogJsonOnTheDataFileIsRefusedAndTheDataKept) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  std::ofstream(Path("data.txt")) << text;
  for (const std::string flag : {"--log-json", "--export", "--trace"}) {
    SCOPED_TRACE(flag);
    auto r = Train({"--data", Path("data.txt"), "--steps", "1", flag, Path("data.txt")});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("same file as --data"), std::string::npos) << r.err;
    EXPECT_EQ(ReadWholeFile(Path("data.txt")), text) << "the data file was changed";
  }
  // Through another name (a symlink) too.
  std::filesystem::create_symlink(Path("data.txt"), Path("alias.jsonl"));
  auto r = Train({"--data", Path("data.txt"), "--steps", "1", "--log-json", Path("alias.jsonl")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ReadWholeFile(Path("data.txt")), text);
}

TEST_F(TrainOutputs, LogJsonWriteFailureFailsTheRun) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  auto r = Train({"--steps", "3", "--log-json", "/dev/full"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("strata: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/dev/full"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("step     2/3"), std::string::npos) << "ran on after the failed write";
  // With checkpoints on, the run stops after the step with a checkpoint and says so.
  std::vector<std::string> paged = Paged(3);
  paged.insert(paged.end(), {"--log-json", "/dev/full"});
  auto p = Train(paged);
  EXPECT_EQ(p.exit_code, 1) << p.err;
  EXPECT_NE(p.err.find("stopped after step 1 (checkpoint step-00000001 written"), std::string::npos)
      << p.err;
}

TEST_F(TrainOutputs, OutputIntoMissingDirectoryFailsBeforeStep1) {
  for (const std::string flag : {"--export", "--export-grads", "--trace", "--log-json"}) {
    SCOPED_TRACE(flag);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = Train({"--steps", "2000", flag, Path("missing/out")});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(flag + " " + Path("missing/out")), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("step "), std::string::npos) << "trained first: " << r.err;
    EXPECT_LT(s, 5.0);
  }
  auto dir = Train({"--steps", "1", "--export", dir_});
  EXPECT_EQ(dir.exit_code, 2) << dir.err;
  EXPECT_NE(dir.err.find("is a directory"), std::string::npos) << dir.err;
}

TEST_F(TrainOutputs, OutputsAreDistinctAndOutsideThePageStore) {
  auto same = Train({"--steps", "1", "--log-json", Path("x"), "--export", Path("x")});
  EXPECT_EQ(same.exit_code, 2) << same.err;
  EXPECT_NE(same.err.find("--log-json and --export both name"), std::string::npos) << same.err;
  std::filesystem::create_directories(Path("nvme"));
  auto in_store =
      Train({"--steps", "1", "--nvme-dir", Path("nvme"), "--log-json", Path("nvme/log.jsonl")});
  EXPECT_EQ(in_store.exit_code, 2) << in_store.err;
  EXPECT_NE(in_store.err.find("lies in --nvme-dir"), std::string::npos) << in_store.err;
  EXPECT_FALSE(std::filesystem::exists(Path("nvme/log.jsonl")));
}

TEST_F(TrainOutputs, ResumedRunKeepsTheLogHistory) {
  const std::string log = Path("log.jsonl");
  std::vector<std::string> first = Paged(3);
  first.insert(first.end(), {"--log-json", log});
  auto a = Train(first);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  // A killed run logs steps past its last checkpoint, and may leave half a line.
  std::ofstream(log, std::ios::app)
      << "{\"step\":4,\"loss\":123.0,\"tokens_per_s\":1}\n{\"step\":5,";
  // A second run that is refused (the store exists and --resume is missing) leaves it alone.
  const std::string before = ReadWholeFile(log);
  auto refused = Train(first);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_EQ(ReadWholeFile(log), before) << "a refused run touched the log";

  std::vector<std::string> second = Paged(5);
  second.insert(second.end(), {"--resume", "--log-json", log});
  auto b = Train(second);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::map<long, std::string> got = Steps(log);
  ASSERT_EQ(got.size(), 5u) << ReadWholeFile(log);
  for (long step = 1; step <= 5; ++step) EXPECT_EQ(got.count(step), 1u) << step;
  EXPECT_NE(Loss(got.at(4)), "\"loss\":123.0") << "the killed run's step 4 was kept";

  // The same losses as one uninterrupted run.
  std::filesystem::remove_all(Path("nvme"));
  std::filesystem::remove_all(Path("ckpt"));
  std::vector<std::string> whole = Paged(5);
  whole.insert(whole.end(), {"--log-json", Path("whole.jsonl")});
  auto c = Train(whole);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::map<long, std::string> want = Steps(Path("whole.jsonl"));
  for (long step = 1; step <= 5; ++step) EXPECT_EQ(Loss(got.at(step)), Loss(want.at(step)));
}

}  // namespace
}  // namespace strata::testing
