// Issue 12, finding 3 (disk full), through the CLI on a small ext4 filesystem of the test's own
// (a loop mount; needs root, else the tests skip):
// - the catalog preallocated no space: a --ckpt-dir beside the store kept failing with ENOSPC
//   while df still showed free space (RocksDB reserved ~70 MiB for its log);
// - --resume on a nearly full filesystem ends with ENOSPC's message (exit 1), not an abort
//   inside RocksDB, and the checkpoint stays intact: with space freed the run resumes and
//   reproduces the uninterrupted run's losses.
#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

uint64_t FreeBytes(const std::string& path) {
  struct statvfs v;
  return ::statvfs(path.c_str(), &v) == 0 ? uint64_t(v.f_bavail) * v.f_frsize : 0;
}

// step -> the loss text of each line of a --log-json file.
std::map<long, std::string> Losses(const std::string& path) {
  std::map<long, std::string> out;
  std::istringstream in(ReadWholeFile(path));
  std::string line;
  while (std::getline(in, line)) {
    const auto s = line.find("\"step\":"), l = line.find("\"loss\":");
    if (s == std::string::npos || l == std::string::npos) continue;
    out[std::stol(line.substr(s + 7))] = line.substr(l, line.find(',', l) - l);
  }
  return out;
}

class NvmeDiskSpace : public ::testing::Test {
 protected:
  void SetUp() override {
    mnt_ = dir_.sub("mnt");
    const std::string img = dir_.path() + "/fs.img";
    if (Sh("truncate -s 96M " + ShellQuote(img)) != 0 ||
        Sh("mkfs.ext4 -q -F " + ShellQuote(img)) != 0 ||
        Sh("mount -o loop " + ShellQuote(img) + " " + ShellQuote(mnt_)) != 0) {
      GTEST_SKIP() << "cannot loop-mount an ext4 image here (needs root, mkfs.ext4 and loop "
                      "devices)";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) Sh("umount -l " + ShellQuote(mnt_));
  }
  // Fills the filesystem until `left` bytes are free.
  void FillLeaving(uint64_t left) {
    const uint64_t free_bytes = FreeBytes(mnt_);
    ASSERT_GT(free_bytes, left);
    ASSERT_EQ(Sh("fallocate -l " + std::to_string(free_bytes - left) + " " +
                 ShellQuote(mnt_ + "/filler")),
              0);
  }
  std::vector<std::string> Train(long steps, const std::string& where, bool resume) {
    std::vector<std::string> a = {"train",        "--model",       "tiny",   "--batch",
                                  "2",            "--seq",         "32",     "--steps",
                                  std::to_string(steps), "--page-size", "64K", "--threads",
                                  "1",            "--nvme-dir",    where + "/nv",
                                  "--ckpt-dir",   where + "/ck",   "--ckpt-every", "1",
                                  "--log-level",  "warn",          "--log-json",
                                  dir_.path() + "/log-" + std::to_string(runs_++) + ".jsonl"};
    if (resume) a.push_back("--resume");
    std::filesystem::create_directories(where + "/nv");
    return a;
  }
  std::string LastLog() const { return dir_.path() + "/log-" + std::to_string(runs_ - 1) + ".jsonl"; }

  ScratchDir dir_{"diskspace"};
  std::string mnt_;
  bool mounted_ = false;
  int runs_ = 0;
};

TEST_F(NvmeDiskSpace, ACheckpointDirBesideTheStoreHasItsSpace) {
  FillLeaving(28 << 20);  // the store's 3 MiB of slots and its catalog's headroom fit
  RunResult r = RunStrata(Train(3, mnt_, false), dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("No space"), std::string::npos) << r.err;
}

TEST_F(NvmeDiskSpace, ResumeOnANearlyFullDiskFailsCleanlyAndKeepsTheCheckpoint) {
  RunResult first = RunStrata(Train(3, mnt_, false), dir_.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  FillLeaving(2 << 20);
  RunResult full = RunStrata(Train(6, mnt_, true), dir_.path());
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find("Assertion"), std::string::npos) << full.err;
  std::filesystem::remove(mnt_ + "/filler");
  RunResult resumed = RunStrata(Train(6, mnt_, true), dir_.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto after = Losses(LastLog());
  // The uninterrupted run, off the small filesystem.
  RunResult ref = RunStrata(Train(6, dir_.path() + "/ref", false), dir_.path());
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const auto want = Losses(LastLog());
  for (long step = 4; step <= 6; ++step) {
    ASSERT_TRUE(after.count(step)) << "step " << step << " missing after the resume";
    EXPECT_EQ(after.at(step), want.at(step)) << "step " << step;
  }
}

}  // namespace
}  // namespace strata::testing
