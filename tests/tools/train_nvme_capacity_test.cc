// Issue 32, item 7: `strata train`'s NVMe tier is sized to what it stores (Note [NVMe capacity]
// in memory/nvme_capacity.h). Through the CLI on the small model, whose pages move through
// the NVMe tier (--host-mem 4M of its 166.75 MiB of state), with --nvme-mem standing in for a
// disk's free space (the room of a disk is the sizing function's input: tests/scheduler/
// nvme_capacity_test.cc holds its three cases): at the minimum, with or without checkpoints,
// the run trains; between the minimum and the default it says in one line how many
// checkpoints fit and keeps that many; below the minimum it is refused naming the minimum.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

class TrainNvmeCapacity : public ::testing::Test {
 protected:
  // The host pool holds a fraction of the state, so that pages move through the NVMe tier.
  RunResult Train(const std::string& nvme_mem, const std::string& name, bool ckpt = true) {
    std::filesystem::create_directories(dir_ + "/" + name);
    std::vector<std::string> a = {"train",   "--model",     "small", "--steps",    "4",
                                  "--batch", "2",           "--seq", "64",         "--threads",
                                  "2",       "--page-size", "64K",   "--host-mem", "4M"};
    a.insert(a.end(), {"--nvme-dir", dir_ + "/" + name});
    if (ckpt) {
      a.insert(a.end(), {"--ckpt-dir", dir_ + "/ck-" + name, "--ckpt-every", "1",
                         "--keep-checkpoints", "3"});
    }
    if (!nvme_mem.empty()) a.insert(a.end(), {"--nvme-mem", nvme_mem});
    return RunStrata(a, dir_);
  }
  // The bytes of "<number> <unit>" (FormatBytes) right after `before` in `text`.
  // The minimum the refusal of a 64K --nvme-mem names, rounded up to whole 64K pages (FormatBytes
  // rounds to 0.01 of its unit, less than a page: the minimum, or one page more).
  uint64_t Minimum(bool ckpt) {
    const RunResult low = Train("64K", ckpt ? "probe" : "probe-nockpt", ckpt);
    const uint64_t page = 64 << 10;
    return (BytesAfter(low.err, "is below the ") + page - 1) / page * page;
  }
  static uint64_t BytesAfter(const std::string& text, const std::string& before) {
    const size_t at = text.find(before);
    if (at == std::string::npos) return 0;
    char* end = nullptr;
    const double n = std::strtod(text.c_str() + at + before.size(), &end);
    const std::string unit(end + 1, end + 4);
    return uint64_t(n * (unit == "GiB" ? 1 << 30 : unit == "MiB" ? 1 << 20 : 1 << 10));
  }
  static size_t Count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  ScratchDir scratch_{"nvmecap"};
  const std::string dir_ = scratch_.path();
};

TEST_F(TrainNvmeCapacity, BelowTheMinimumIsRefusedNamingIt) {
  const RunResult r = Train("64K", "low");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("strata: error: --nvme-mem 64.00 KiB is below the "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" that the NVMe tier needs (one version of each of the "), std::string::npos)
      << r.err;
  EXPECT_GT(BytesAfter(r.err, "is below the "), 64u << 10) << r.err;
}

TEST_F(TrainNvmeCapacity, BetweenTheMinimumAndTheDefaultTrainsAndSaysHowManyCheckpointsFit) {
  const uint64_t min = Minimum(true);
  ASSERT_GT(min, 0u);
  // Far less than one more checkpoint (every page). At that capacity four steps with a
  // checkpoint after each fill no more than the store (with room for only the parameters and
  // moments of the kept checkpoint, the store was full at step 3: a checkpoint pins the written
  // back gradients too).
  const RunResult r = Train(std::to_string(min), "mid");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "checkpoints of --keep-checkpoints"), 1u) << r.err;
  EXPECT_NE(r.err.find("room for 1 of the 3 checkpoints of --keep-checkpoints, so the run keeps "
                       "the 1 newest"),
            std::string::npos)
      << r.err;
}

// Without checkpoints the minimum is every page once and what the host pool stages: the run
// trains at it (the staged versions went past the state's pages: a peak of 170.00 MiB for its
// 166.75 MiB of state, in 170.75 MiB).
TEST_F(TrainNvmeCapacity, AtTheMinimumWithoutCheckpointsTheRunTrains) {
  const uint64_t min = Minimum(false);
  ASSERT_GT(min, 0u);
  const RunResult r = Train(std::to_string(min), "bare", false);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("--keep-checkpoints"), std::string::npos) << r.err;
}

TEST_F(TrainNvmeCapacity, TheDefaultKeepsEveryCheckpointSilently) {
  const RunResult r = Train("", "default");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("--keep-checkpoints"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata::testing
