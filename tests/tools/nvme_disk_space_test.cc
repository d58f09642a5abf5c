// A full disk, through the CLI on a small ext4 filesystem of the test's own (a loop mount made
// with -m 0, tests/common/loop_mount.h; needs root, else the tests skip).
// Issue 12, finding 3:
// - the catalog preallocated no space: a --ckpt-dir beside the store kept failing with ENOSPC
//   while df still showed free space (RocksDB reserved ~70 MiB for its log);
// - --resume on a nearly full filesystem ends with ENOSPC's message (exit 1), not an abort
//   inside RocksDB, and the checkpoint stays intact: with space freed the run resumes and
//   reproduces the uninterrupted run's losses.
// Issue 29:
// - item 4: a disk that fills while a run trains stopped it with SIGABRT (RocksDB's assertion,
//   5 of 5 trials); it must stop with exit 1 and ENOSPC's message, and --resume after freeing
//   the space must continue exactly (Note [Poisoned catalog] in storage/catalog.cc);
// - item 13: every refusal for lack of space (a --nvme-mem or a default capacity larger than the
//   disk, several --nvme-dir on one disk, a growth on --resume) says "No space left on device
//   (ENOSPC)" with the bytes needed and free, exit 1.
// Issue 32, item 7 (Note [NVMe capacity] in memory/nvme_capacity.h): without --nvme-mem a new
// store takes the default when the disk holds it; with less room but at least the minimum the
// run trains and says in one line how many checkpoints fit; below the minimum it is refused
// naming the minimum and the free space.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/loop_mount.h"
#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

using test_support::LoopMount;

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
    if (!disk_.ok()) GTEST_SKIP() << "cannot loop-mount an ext4 image here: " << disk_.why();
    mnt_ = disk_.path();
  }
  // Fills the filesystem until `left` bytes are free.
  void FillLeaving(uint64_t left) { ASSERT_TRUE(disk_.fill_leaving(left)); }
  std::vector<std::string> Train(long steps, const std::string& where, bool resume,
                                 const std::string& ckpt_where = "") {
    const std::string ckpt = (ckpt_where.empty() ? where : ckpt_where) + "/ck";
    const std::string log = dir_.path() + "/log-" + std::to_string(runs_++) + ".jsonl";
    std::vector<std::string> a = {"train", "--model", "tiny", "--batch", "2", "--seq", "32"};
    a.insert(a.end(), {"--steps", std::to_string(steps), "--page-size", "64K", "--threads", "1"});
    a.insert(a.end(), {"--nvme-dir", where + "/nv", "--ckpt-dir", ckpt, "--ckpt-every", "1"});
    a.insert(a.end(), {"--log-level", "warn", "--log-json", log});
    if (resume) a.push_back("--resume");
    std::filesystem::create_directories(where + "/nv");
    return a;
  }
  std::string LastLog() const { return dir_.path() + "/log-" + std::to_string(runs_ - 1) + ".jsonl"; }

  ScratchDir dir_{"diskspace"};
  LoopMount disk_{dir_.path(), 96 << 20};
  std::string mnt_;
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
  disk_.unfill();
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

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Issue 29, item 4: the disk fills while the run trains (everything the filesystem has left
// taken at once, after a few steps). The catalog's log meets ENOSPC (and the checkpoint records
// too when they share the disk): exit 1 with ENOSPC's message and one error line, no abort; with
// the space freed, --resume continues from the last checkpoint with the losses of a run that
// never stopped.
TEST_F(NvmeDiskSpace, ADiskThatFillsMidRunStopsWithENOSPCAndResumeContinuesExactly) {
  constexpr long kSteps = 60;
  RunResult ref = RunStrata(Train(kSteps, dir_.path() + "/ref", false), dir_.path());
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const auto want = Losses(LastLog());
  ASSERT_EQ(want.size(), size_t(kSteps));
  for (const bool ckpt_on_disk : {false, true}) {
    SCOPED_TRACE(ckpt_on_disk ? "--ckpt-dir on the same disk" : "--ckpt-dir on another disk");
    const std::string where = mnt_ + (ckpt_on_disk ? "/beside" : "/alone");
    const std::string ckpt = ckpt_on_disk ? where : dir_.sub(ckpt_on_disk ? "x" : "elsewhere");
    const pid_t pid = SpawnStrata(Train(kSteps, where, false, ckpt), dir_.path());
    ASSERT_GT(pid, 0);
    const std::string log = LastLog();
    if (!WaitForLines(log, 3, std::chrono::seconds(120))) {
      ::kill(pid, SIGKILL);
      WaitStrata(pid, dir_.path());
      FAIL() << "the run logged no 3 steps";
    }
    // Every free byte at once; what the run frees as it fails (a temporary file) may come back.
    disk_.fill_leaving(0);
    const RunResult full = WaitStrata(pid, dir_.path());
    EXPECT_EQ(full.exit_code, 1) << "(-1: ended by a signal)\n" << full.err;
    EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
    EXPECT_EQ(full.err.find("Assertion"), std::string::npos) << full.err;
    EXPECT_EQ(Count(full.err, "strata: error:"), 1u) << full.err;
    const auto before = Losses(log);
    ASSERT_LT(before.size(), size_t(kSteps)) << "the run ended before the disk filled";
    disk_.unfill();
    RunResult resumed = RunStrata(Train(kSteps, where, true, ckpt), dir_.path());
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const auto after = Losses(LastLog());
    ASSERT_FALSE(after.empty());
    EXPECT_LE(after.begin()->first, long(before.size()) + 1) << "steps skipped on resume";
    EXPECT_EQ(after.rbegin()->first, kSteps);
    for (const auto& [step, loss] : before) EXPECT_EQ(loss, want.at(step)) << "step " << step;
    for (const auto& [step, loss] : after) EXPECT_EQ(loss, want.at(step)) << "step " << step;
  }
}

// Issue 29, item 13: every refusal for lack of space has one wording: ENOSPC's, naming the
// directory, the bytes needed and the bytes free; exit 1 and one error line.
void ExpectNoSpaceRefusal(const RunResult& r, const std::string& dir) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("strata: error: --nvme-dir " + dir + ": No space left on device (ENOSPC): "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" are free; "), std::string::npos) << r.err;
  EXPECT_EQ(Count(r.err, "strata: error:"), 1u) << r.err;
}

TEST_F(NvmeDiskSpace, ANvmeMemLargerThanTheDiskIsRefusedWithENOSPC) {
  std::vector<std::string> args = Train(2, mnt_, false);
  args.insert(args.end(), {"--nvme-mem", "200M"});
  ExpectNoSpaceRefusal(RunStrata(args, dir_.path()), mnt_ + "/nv");
  EXPECT_FALSE(std::filesystem::exists(mnt_ + "/nv/strata.slots"));
}

TEST_F(NvmeDiskSpace, TheDefaultCapacityOnANearlyFullDiskIsRefusedWithENOSPC) {
  FillLeaving(2 << 20);  // the tiny model's default store takes 3 MiB of slots
  const RunResult r = RunStrata(Train(2, mnt_, false), dir_.path());
  ExpectNoSpaceRefusal(r, mnt_ + "/nv");
  EXPECT_NE(r.err.find("the store's slot file"), std::string::npos) << r.err;
}

TEST_F(NvmeDiskSpace, TwoNvmeDirsOnOneDiskNeedTheSumAndAreRefusedWithENOSPC) {
  // Each directory's half fits the disk alone; both together do not.
  const uint64_t mem = disk_.free_bytes() / 2 * 3;
  std::vector<std::string> args = Train(2, mnt_, false);
  std::filesystem::create_directories(mnt_ + "/nv2");
  args.insert(args.end(), {"--nvme-dir", mnt_ + "/nv2", "--nvme-mem", std::to_string(mem)});
  const RunResult r = RunStrata(args, dir_.path());
  ExpectNoSpaceRefusal(r, mnt_ + "/nv2");
  EXPECT_NE(r.err.find("in each of the 2 --nvme-dir on this filesystem"), std::string::npos)
      << r.err;
}

TEST_F(NvmeDiskSpace, GrowingTheStoreBeyondTheDiskOnResumeIsRefusedWithENOSPC) {
  RunResult first = RunStrata(Train(2, mnt_, false), dir_.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::vector<std::string> args = Train(3, mnt_, true);
  args.insert(args.end(), {"--nvme-mem", "200M"});
  const RunResult r = RunStrata(args, dir_.path());
  ExpectNoSpaceRefusal(r, mnt_ + "/nv");
  EXPECT_NE(r.err.find("growing the store to 200"), std::string::npos) << r.err;
  RunResult resumed = RunStrata(Train(3, mnt_, true), dir_.path());  // the store is as it was
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
}

// The tiny model's store at 64K pages (its whole state in the host pool, --ckpt-every 1 and the
// default --keep-checkpoints 2): 16 pages of state, 4 of them gradients; minimum (16 + 16 + 16 +
// 4) pages = 3.25 MiB, default 68 pages = 4.25 MiB; the catalog keeps 16 MiB and 256 bytes a
// slot free beside them.
constexpr uint64_t kHeadroom = (16 << 20) + 256 * 68;

TEST_F(NvmeDiskSpace, RoomBetweenTheMinimumAndTheDefaultTrainsAndSaysHowManyCheckpointsFit) {
  FillLeaving(kHeadroom + (3900 << 10));
  const RunResult r = RunStrata(Train(3, mnt_, false), dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "--keep-checkpoints"), 1u) << r.err;
  EXPECT_NE(r.err.find("[warning] the NVMe tier takes 3.25 MiB on " + mnt_ +
                       "/nv (at least 3.25 MiB, 4.25 MiB with every kept checkpoint): room for 1 "
                       "of the 2 checkpoints of --keep-checkpoints, so the run keeps the 1 newest"),
            std::string::npos)
      << r.err;
}

TEST_F(NvmeDiskSpace, RoomForTheDefaultSaysNothingOfCheckpoints) {
  FillLeaving(kHeadroom + (4400 << 10));
  const RunResult r = RunStrata(Train(3, mnt_, false), dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("--keep-checkpoints"), std::string::npos) << r.err;
}

TEST_F(NvmeDiskSpace, RoomBelowTheMinimumIsRefusedNamingTheMinimumAndTheFreeSpace) {
  FillLeaving(kHeadroom + (3 << 20));
  const uint64_t free_bytes = disk_.free_bytes();
  const RunResult r = RunStrata(Train(3, mnt_, false), dir_.path());
  ExpectNoSpaceRefusal(r, mnt_ + "/nv");
  EXPECT_NE(r.err.find("the store's slot files at the 3.25 MiB that the NVMe tier needs"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("there but only " + std::to_string(free_bytes >> 20)), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(mnt_ + "/nv/strata.slots"));
}

}  // namespace
}  // namespace strata::testing
