// `strata train` as N data-parallel ranks under mpirun (docs/parallel.md): bit-identical to one
// rank running N micro-batches (Note [Data-parallel gradients] in scheduler/data_parallel.h),
// rank 0 alone reporting, and the refusals. Every mpirun has its own --timeout, so a hung
// collective fails the test instead of stalling it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler/trace.h"
#include "tests/common/spawn_process.h"
#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

// The tiny model for 6 steps with clipping at 2.0: some steps clip (norms 2.0-2.7), some do not.
std::vector<std::string> TrainArgs(const std::string& dir, const std::string& tag) {
  return {"train",      "--model",       "tiny",         "--batch",  "8",
          "--seq",      "32",            "--steps",      "6",        "--lr",
          "1e-3",       "--grad-clip",   "2.0",          "--threads", "1",
          "--log-json", dir + "/" + tag + ".jsonl", "--export", dir + "/" + tag + ".safetensors"};
}

struct Outcome {
  std::vector<std::string> losses, norms;  // the JSON texts: exact bits
  int clipped = 0;
  std::string weights;
};

Outcome Read(const std::string& dir, const std::string& tag) {
  Outcome o;
  std::istringstream lines(ReadWholeFile(dir + "/" + tag + ".jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    o.losses.push_back(j.at("loss").dump());
    o.norms.push_back(j.at("grad_norm").dump());
    o.clipped += j.at("clipped").get<bool>() ? 1 : 0;
  }
  o.weights = ReadWholeFile(dir + "/" + tag + ".safetensors");
  return o;
}

// (ranks, --shard): replicated state, or every block sharded through the page manager.
class TrainDp : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(TrainDp, BitIdenticalToOneRankWithAMicroBatchPerRank) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  const auto [n, shard] = GetParam();
  ScratchDir scratch("train_dp");
  const std::string& dir = scratch.path();
  std::vector<std::string> one = TrainArgs(dir, "one");
  one.insert(one.end(), {"--engine", "memory", "--micro-batch", std::to_string(8 / n)});
  RunResult r1 = RunStrata(one, dir);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  std::vector<std::string> dp = TrainArgs(dir, "dp");
  dp.insert(dp.end(), {"--dp", std::to_string(n), "--shard", shard});
  // auto: a host budget that holds every block sharded but not every block replicated, so the
  // search (Note [OSDP's choice]) has a choice to make; whatever it is, the bits are one rank's.
  if (shard == "auto") dp.insert(dp.end(), {"--host-mem", "640K", "--page-size", "16K"});
  RunResult rn = RunMpi({dp}, n, dir);
  ASSERT_EQ(rn.exit_code, 0) << rn.err;
  const Outcome a = Read(dir, "one"), b = Read(dir, "dp");
  ASSERT_EQ(a.losses.size(), 6u);
  EXPECT_GT(a.clipped, 0) << "the run should clip on some steps";
  EXPECT_LT(a.clipped, 6) << "the run should leave some steps unclipped";
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.norms, b.norms);
  EXPECT_FALSE(a.weights.empty());
  EXPECT_TRUE(a.weights == b.weights) << "the exported weights differ";
  // The first line: the grid, each block's decision and the state per rank, then the order.
  const std::string first = rn.err.substr(0, rn.err.find('\n'));
  EXPECT_NE(first.find("grid: dp " + std::to_string(n) + " x tp 1 x pp 1 over mpi"),
            std::string::npos) << first;
  const std::string decision = shard == "none"  ? "blocks 0-3: replicated (--shard none)"
                               : shard == "all" ? "blocks 0-3: sharded (--shard all)"
                                                : "(--shard auto: predicted step";
  EXPECT_NE(first.find(decision), std::string::npos) << first;
  EXPECT_NE(first.find("micro-batch order"), std::string::npos) << first;
  // Rank 0 alone prints progress: one line per step, not one per rank.
  size_t lines = 0;
  for (size_t p = rn.err.find("step     1/6"); p != std::string::npos;
       p = rn.err.find("step     1/6", p + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << rn.err;
}

INSTANTIATE_TEST_SUITE_P(RanksAndShard, TrainDp,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values("none", "all", "auto")));

// The paged engine under tight budgets, parameters and moments on NVMe (each rank its own
// --nvme-dir D/rank-<r>), with and without clipping (updates after the norm, or during
// backward), state replicated or sharded (all-split2: sharded with --split-ops 2): the bits of one
// paged rank with a micro-batch per rank.
class TrainDpPaged : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainDpPaged, ParamsAndOptimizerOnNvmeBitIdenticalToOneRank) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  const bool split = GetParam() == "all-split2";
  const std::string shard = split ? "all" : GetParam();
  ScratchDir scratch("train_dp_paged");
  const std::string& dir = scratch.path();
  for (const char* clip : {"2.0", "0"}) {
    const std::string tag = std::string("clip") + clip;
    auto args = [&](const std::string& who) {
      std::vector<std::string> a = TrainArgs(dir, who + tag);
      *(std::find(a.begin(), a.end(), "--grad-clip") + 1) = clip;
      a.insert(a.end(), {"--page-size", "64K", "--params-on", "nvme",
                         "--optimizer-on", "nvme", "--host-mem", "512K", "--nvme-dir",
                         dir + "/nvme-" + who + tag});
      return a;
    };
    std::vector<std::string> one = args("one");
    one.insert(one.end(), {"--micro-batch", "4"});
    ASSERT_EQ(::mkdir((dir + "/nvme-one" + tag).c_str(), 0755), 0);
    RunResult r1 = RunStrata(one, dir);
    ASSERT_EQ(r1.exit_code, 0) << r1.err;
    std::vector<std::string> dp = args("dp");
    dp.insert(dp.end(), {"--dp", "2", "--shard", shard, "--split-ops", split ? "2" : "1"});
    RunResult r2 = RunMpi({dp}, 2, dir);
    ASSERT_EQ(r2.exit_code, 0) << r2.err;
    const size_t mean = r1.err.find("moved per step (mean)");
    ASSERT_NE(mean, std::string::npos) << r1.err;
    EXPECT_EQ(r1.err.find("nvme read 0 B", mean), std::string::npos) << "no NVMe traffic: "
                                                                     << r1.err.substr(mean);
    const Outcome a = Read(dir, "one" + tag), b = Read(dir, "dp" + tag);
    ASSERT_EQ(a.losses.size(), 6u);
    EXPECT_EQ(a.losses, b.losses) << "clip " << clip;
    EXPECT_EQ(a.norms, b.norms) << "clip " << clip;
    EXPECT_TRUE(a.weights == b.weights) << "clip " << clip << ": the exported weights differ";
    for (const char* rank : {"/rank-0", "/rank-1"}) {
      struct stat st{};
      EXPECT_EQ(::stat((dir + "/nvme-dp" + tag + rank).c_str(), &st), 0) << rank;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shard, TrainDpPaged,
                         ::testing::Values("none", "all", "auto", "all-split2"));

// Several micro-batches per rank: every rank folds its own micro-batches first, so the run is
// not one rank's bits (Note [Data-parallel gradients]), but sharding changes nothing: layer-major
// with --shard all gives the bits of the same job with replicated state.
TEST(TrainDpSharded, LayerMajorWithMicroBatchesPerRankMatchesReplicatedState) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_dp_layer_major");
  const std::string& dir = scratch.path();
  for (const char* shard : {"none", "all"}) {
    std::vector<std::string> a = TrainArgs(dir, shard);
    a.insert(a.end(), {"--engine", "paged", "--micro-batch", "2", "--micro-batch-order",
                       "layer-major", "--recompute", "all", "--dp", "2", "--shard", shard});
    RunResult r = RunMpi({a}, 2, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("layer-major"), std::string::npos) << r.err;
  }
  const Outcome a = Read(dir, "none"), b = Read(dir, "all");
  ASSERT_EQ(a.losses.size(), 6u);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.norms, b.norms);
  EXPECT_TRUE(a.weights == b.weights) << "the exported weights differ";
}

// The last step's peak bytes of a tier, from a --log-json.
uint64_t PeakBytes(const std::string& path, const char* tier) {
  std::istringstream lines(ReadWholeFile(path));
  uint64_t peak = 0;
  for (std::string line; std::getline(lines, line);) {
    peak = nlohmann::json::parse(line).at("peak_bytes").at(tier).get<uint64_t>();
  }
  return peak;
}

// --shard all: a rank's peak state bytes on the host (everything there) and on NVMe (parameters
// and moments there, a small pool) are at most 1/dp of one rank's plus one page per block and kind
// of state (a block's parameters, gradient and two moments are each paged on their own, Note [Page
// packing], so each may round up by a page). On NVMe a page being rewritten holds a second slot
// until its write commits, and how many are in flight at the peak depends on timing: at most one
// per frame of the host pool, which the NVMe bound allows on top.
TEST(TrainDpSharded, EachRankHoldsItsShareOfTheStateOnHostAndNvme) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_dp_memory");
  const std::string& dir = scratch.path();
  const uint64_t page = 16 * 1024, blocks = 4, kinds = 4;
  const std::vector<std::string> base = {"train", "--model", "tiny", "--n-embd", "64", "--batch",
                                         "4", "--seq", "32", "--steps", "2", "--threads", "1",
                                         "--page-size", "16K", "--engine", "paged"};
  struct Tier {
    const char* name;
    std::vector<std::string> flags;
  };
  const uint64_t pool = 256 * 1024;
  const Tier tiers[] = {{"host", {}},
                        {"nvme", {"--params-on", "nvme", "--optimizer-on", "nvme", "--host-mem",
                                  "256K"}}};
  for (const Tier& t : tiers) {
    auto args = [&](const std::string& who) {
      std::vector<std::string> a = base;
      a.insert(a.end(), t.flags.begin(), t.flags.end());
      a.insert(a.end(), {"--log-json", dir + "/" + who + t.name + ".jsonl"});
      if (std::string(t.name) == "nvme") a.insert(a.end(), {"--nvme-dir", dir + "/" + who + "-nvme"});
      return a;
    };
    std::vector<std::string> one = args("one");
    one.insert(one.end(), {"--micro-batch", "2"});
    if (std::string(t.name) == "nvme") {
      ASSERT_EQ(::mkdir((dir + "/one-nvme").c_str(), 0755), 0);
    }
    RunResult r1 = RunStrata(one, dir);
    ASSERT_EQ(r1.exit_code, 0) << r1.err;
    std::vector<std::string> dp = args("dp");
    dp.insert(dp.end(), {"--dp", "2", "--shard", "all"});
    RunResult r2 = RunMpi({dp}, 2, dir);
    ASSERT_EQ(r2.exit_code, 0) << r2.err;
    const uint64_t single = PeakBytes(dir + "/one" + t.name + ".jsonl", t.name);
    const uint64_t rank = PeakBytes(dir + "/dp" + t.name + ".jsonl", t.name);
    ASSERT_GT(single, 64 * page) << t.name << ": the state should span many pages";
    const uint64_t in_flight = std::string(t.name) == "nvme" ? pool : 0;
    EXPECT_LE(rank, single / 2 + blocks * kinds * page + in_flight)
        << t.name << ": one rank " << single << " bytes, a rank of dp2 " << rank;
  }
}

// The step program's collectives are real ops on each rank's comm queue (Queue::kComm in the
// trace): every step reduces each block's final gradient once; with --shard all each load of a
// block's parameters is followed by an all-gather of its whole (gathered) slot, and with
// --shard none nothing is gathered.
TEST(TrainDpSharded, EachRanksTraceHoldsTheStepsCollectives) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_dp_trace");
  const std::string& dir = scratch.path();
  const int blocks = 4, steps = 3;
  for (const std::string shard : {"none", "all"}) {
    RunResult r = RunMpi({{"train", "--model", "tiny", "--batch", "8", "--seq", "32", "--steps",
                           std::to_string(steps), "--threads", "1", "--engine", "paged", "--dp",
                           "2", "--shard", shard, "--trace", dir + "/" + shard + ".json"}},
                         2, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* rank : {".rank-0", ".rank-1"}) {
      const std::string path = dir + "/" + shard + rank + ".json";
      const auto trace = nlohmann::json::parse(ReadWholeFile(path), nullptr, false);
      ASSERT_FALSE(trace.is_discarded()) << path;
      std::map<long, int> sums, gathers;
      for (const auto& e : trace.at("traceEvents")) {
        if (e.value("ph", "") != "X" || e.value("tid", -1) != int(scheduler::Queue::kComm)) continue;
        const std::string name = e.at("name");
        const long step = e.at("args").at("step");
        EXPECT_GT(e.at("args").at("bytes").get<uint64_t>(), 0u) << name;
        if (name.rfind("sum of the gradient of block", 0) == 0) ++sums[step];
        if (name.rfind("all-gather of the parameters of block", 0) == 0) ++gathers[step];
      }
      for (long step = 0; step < steps; ++step) {
        EXPECT_EQ(sums[step], blocks) << path << " step " << step;
        if (shard == "all") {
          EXPECT_GE(gathers[step], blocks) << path << " step " << step;
        } else {
          EXPECT_EQ(gathers[step], 0) << path << " step " << step;
        }
      }
    }
  }
}

TEST(TrainDpRefusals, ShardingWhatItCannotRunIsRefusedSayingWhatToDo) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_dp_shard_refusals");
  const std::vector<std::string> base = {"train", "--model", "tiny", "--steps", "1", "--seq",
                                         "32", "--batch", "8", "--dp", "2", "--shard", "all"};
  std::vector<std::string> micro = base, memory = base;
  micro.insert(micro.end(), {"--micro-batch", "2"});
  memory.insert(memory.end(), {"--engine", "memory"});
  RunResult r = RunMpi({micro}, 2, scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--micro-batch-order layer-major --recompute all"), std::string::npos)
      << r.err;
  r = RunMpi({memory}, 2, scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("drop --engine memory"), std::string::npos) << r.err;
}

TEST(TrainDpRefusals, RanksWithDifferentFlagsAreRefusedNamingTheFlag) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_dp_mismatch");
  const std::vector<std::string> base = {"train", "--model", "tiny", "--steps", "2", "--seq", "32"};
  std::vector<std::string> a = base, b = base;
  a.insert(a.end(), {"--batch", "8"});
  b.insert(b.end(), {"--batch", "16"});
  RunResult r = RunMpi({a, b}, 1, scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("rank 1 was started with another --batch than rank 0"), std::string::npos)
      << r.err;
}

// The PIDs of `parent`'s children (the ranks, for mpirun on one machine).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::istringstream in(ReadWholeFile("/proc/" + std::to_string(parent) + "/task/" +
                                      std::to_string(parent) + "/children"));
  std::vector<pid_t> pids;
  for (pid_t p; in >> p;) pids.push_back(p);
  return pids;
}

// Starts `mpirun -np 2 strata <args>` in the background, its output in `dir`/spawned.txt; -1
// when it cannot be started.
pid_t SpawnMpi(const std::vector<std::string>& args, const std::string& dir, int ranks = 2) {
  std::vector<std::string> argv = {kMpirun, "--allow-run-as-root", "--oversubscribe", "--timeout",
                                   "100", "-np", std::to_string(ranks), STRATA_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return test_support::SpawnProcess(argv, dir + "/spawned.txt");
}

// Kills one rank of the job `mpirun` and waits for the job: true when it ended with an error
// within 60 s (it is killed and false otherwise).
bool KillOneRankEndsTheJob(pid_t mpirun) {
  const std::vector<pid_t> ranks = ChildrenOf(mpirun);
  if (ranks.size() < 2 || ::kill(ranks.back(), SIGKILL) != 0) return false;
  const auto killed_at = std::chrono::steady_clock::now();
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(mpirun, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - killed_at < std::chrono::seconds(60)) {
    ::usleep(50000);
  }
  if (done == 0) {
    ::kill(mpirun, SIGKILL);
    ::waitpid(mpirun, &status, 0);
    return false;
  }
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// SIGKILL one rank mid-run: the job ends with an error within 60 s, none hangs, and --resume on
// every rank (Note [Checkpoints across ranks]) gives the uninterrupted run's losses. pp2-all: a
// pipeline of 2 stages x dp 2, sharded (4 ranks).
class TrainDpFailure : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainDpFailure, AKilledRankEndsTheJobAndResumeContinuesExactly) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  // all-split: sharded; the uninterrupted run whole, the killed run in 2 slices and its resume
  // in 4 (Note [Split operators]: splitting changes neither ownership nor bits).
  const bool split = GetParam() == "all-split", piped = GetParam() == "pp2-all";
  const std::string shard = split || piped ? "all" : GetParam();
  const int ranks = piped ? 4 : 2;
  ScratchDir scratch("train_dp_kill");
  const std::string& dir = scratch.path();
  auto args = [&](const std::string& run, const char* split_ops = "1") {
    return std::vector<std::string>{
        "train", "--model", "tiny", "--batch", "8", "--seq", "32", "--steps", "16", "--threads",
        "1", "--lr", "1e-3", "--page-size", "64K", "--params-on", "nvme", "--optimizer-on",
        "nvme", "--host-mem", "512K", "--ckpt-every", "1", "--dp", "2", "--shard", shard,
        "--nvme-dir",
        dir + "/" + run + "-nvme", "--ckpt-dir", dir + "/" + run + "-ckpt", "--log-json",
        dir + "/" + run + ".jsonl", "--split-ops", split_ops, "--pp", piped ? "2" : "1"};
  };
  RunResult whole = RunMpi({args("whole")}, ranks, dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const pid_t mpirun = SpawnMpi(args("killed", split ? "2" : "1"), dir, ranks);
  ASSERT_GT(mpirun, 0);
  ASSERT_TRUE(WaitForLines(dir + "/killed.jsonl", 5, std::chrono::seconds(60)))
      << "the job never took 5 steps";
  ASSERT_TRUE(KillOneRankEndsTheJob(mpirun))
      << "the job did not end with an error within 60 s of a rank's SIGKILL";
  std::vector<std::string> resume = args("killed", split ? "4" : "1");
  resume.push_back("--resume");
  RunResult resumed = RunMpi({resume}, ranks, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  // It continued from a checkpoint, not from the start (which would give the same losses too).
  EXPECT_NE(resumed.err.find("resuming after step"), std::string::npos) << resumed.err;
  const auto expected = LossesByStep(dir + "/whole.jsonl");
  const auto got = LossesByStep(dir + "/killed.jsonl");
  ASSERT_EQ(expected.size(), 16u);
  for (const auto& [step, loss] : expected) {
    ASSERT_TRUE(got.count(step)) << "step " << step << " missing after the resume";
    EXPECT_EQ(got.at(step), loss) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(Shard, TrainDpFailure,
                         ::testing::Values("none", "all", "auto", "all-split", "pp2-all"));

// --split-ops: a factor other than 1, 2, 4 or auto is a usage error, and so is splitting a run
// that shards nothing (there is nothing to split): refused, not ignored.
TEST(TrainDpRefusals, SplitOpsNeedsADivisorOfTheChunksAndShardedBlocks) {
  ScratchDir scratch("train_split_ops");
  for (const char* bad : {"0", "3", "8", "two"}) {
    RunResult r = RunStrata({"train", "--model", "tiny", "--steps", "1", "--split-ops", bad},
                            scratch.path());
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--split-ops must be 1, 2, 4"), std::string::npos) << r.err;
  }
  RunResult r = RunStrata({"train", "--model", "tiny", "--steps", "1", "--split-ops", "2"},
                          scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--split-ops 2 splits sharded blocks, and this run shards none (one rank)"),
            std::string::npos)
      << r.err;
}

// The minimal device working set a run states when --gpu-mem is below it ("... is below the
// 1.23 MiB (1290240 bytes) that the minimal device working set needs").
uint64_t MinimalDeviceBytes(const std::string& err) {
  const size_t at = err.find(" bytes) that the minimal device working set");
  if (at == std::string::npos) return 0;
  const size_t open = err.rfind('(', at);
  return std::stoull(err.substr(open + 1, at - open - 1));
}

// --split-ops K (Note [Split operators] in scheduler/split_plan.h): dp2 with every block sharded,
// the transformer blocks' MLP weights gathered and computed in K slices. The losses, norms and
// exported weights are --split-ops 1's bits, and the device peak is lower. auto keeps blocks whole
// when they fit --gpu-mem and splits them when only split ones do.
TEST(TrainDpSplit, SlicesKeepTheBitsAndLowerTheDevicePeak) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_dp_split");
  const std::string& dir = scratch.path();
  auto args = [&](const std::string& tag, const std::string& k) {
    std::vector<std::string> a = TrainArgs(dir, tag);
    a.insert(a.end(), {"--dp", "2", "--shard", "all", "--engine", "paged", "--split-ops", k});
    return a;
  };
  RunResult whole = RunMpi({args("whole", "1")}, 2, dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const Outcome a = Read(dir, "whole");
  const uint64_t whole_peak = PeakBytes(dir + "/whole.jsonl", "device");
  for (const char* k : {"2", "4"}) {
    RunResult split = RunMpi({args(std::string("split") + k, k)}, 2, dir);
    ASSERT_EQ(split.exit_code, 0) << split.err;
    const std::string first = split.err.substr(0, split.err.find('\n'));
    EXPECT_NE(first.find(std::string("split-ops ") + k + " for blocks 1-2"), std::string::npos)
        << first;
    const Outcome b = Read(dir, std::string("split") + k);
    ASSERT_EQ(b.losses.size(), 6u);
    EXPECT_EQ(a.losses, b.losses) << "--split-ops " << k;
    EXPECT_EQ(a.norms, b.norms) << "--split-ops " << k;
    EXPECT_TRUE(a.weights == b.weights) << "--split-ops " << k << ": the exported weights differ";
    const uint64_t peak = PeakBytes(dir + "/split" + k + ".jsonl", "device");
    EXPECT_LT(peak, whole_peak) << "--split-ops " << k << ": device peak " << peak
                                << " bytes, whole blocks " << whole_peak;
  }
  // auto: whole blocks when they fit.
  RunResult fits = RunMpi({args("auto_fits", "auto")}, 2, dir);
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_NE(fits.err.find("split-ops 1 (auto: whole blocks fit --gpu-mem)"), std::string::npos)
      << fits.err.substr(0, fits.err.find('\n'));
}

// --split-ops auto under a --gpu-mem below whole blocks' minimal working set (which the refusal
// states) splits them, on every rank alike, with whole blocks' bits. 4 ranks: each owns little of
// the MLP weights (a rank's split slot holds its own pieces of them), so splitting lowers every
// rank's minimal working set (Note [Split operators]).
TEST(TrainDpSplit, AutoSplitsWhenWholeBlocksDoNotFitTheDevice) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_dp_split_auto");
  const std::string& dir = scratch.path();
  auto args = [&](const std::string& tag, const std::string& k, const std::string& gpu_mem) {
    std::vector<std::string> a = TrainArgs(dir, tag);
    a.insert(a.end(), {"--dp", "4", "--shard", "all", "--engine", "paged", "--split-ops", k,
                       "--recompute", "all"});
    if (!gpu_mem.empty()) a.insert(a.end(), {"--gpu-mem", gpu_mem});
    return a;
  };
  RunResult whole = RunMpi({args("whole", "1", "")}, 4, dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  RunResult refused = RunMpi({args("refused", "1", "1K")}, 4, dir);
  ASSERT_NE(refused.exit_code, 0);
  const uint64_t whole_min = MinimalDeviceBytes(refused.err);
  ASSERT_GT(whole_min, 0u) << refused.err;
  RunResult split = RunMpi({args("split", "auto", std::to_string(whole_min - 1))}, 4, dir);
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const std::string first = split.err.substr(0, split.err.find('\n'));
  EXPECT_NE(first.find("for blocks 1-2 (auto: the fewest slices with which --gpu-mem fits)"),
            std::string::npos)
      << first;
  const Outcome a = Read(dir, "whole"), b = Read(dir, "split");
  ASSERT_EQ(b.losses.size(), 6u);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.norms, b.norms);
  EXPECT_TRUE(a.weights == b.weights) << "the exported weights differ";
}

// The 3D grid (parallel/grid.h): a grid that does not fit the job or the model is a usage error
// naming the flag; what is not built yet with tp or pp (sharding, split operators) is refused as
// such, not run as something else.
TEST(TrainGridRefusals, BadGridsNameTheFlagAndWhatIsNotBuiltIsRefused) {
  ScratchDir scratch("train_grid");
  const std::string& dir = scratch.path();
  const std::vector<std::string> base = {"train", "--model", "tiny", "--steps", "1",
                                         "--batch", "4"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  RunResult alone = RunStrata(with({"--tp", "2"}), dir);
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_NE(alone.err.find("--tp 2 x --pp 1 = 2 does not divide the job's 1 ranks"),
            std::string::npos)
      << alone.err;
  RunResult schedule = RunStrata(with({"--schedule", "zigzag"}), dir);
  EXPECT_EQ(schedule.exit_code, 2) << schedule.err;
  EXPECT_NE(schedule.err.find("--schedule must be gpipe or 1f1b"), std::string::npos);
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  struct Case {
    int ranks;
    std::vector<std::string> flags;
    int exit_code;
    std::string says;
  };
  const Case cases[] = {
      {2, {"--dp", "2", "--tp", "2"}, 2, "--dp 2 x --tp 2 x --pp 1 = 4 ranks, and this job has 2"},
      {3,
       {"--tp", "3"},
       2,
       "--tp 3 does not divide the 2 attention heads of transformer.h.0.attn.c_attn.weight"},
      {3, {"--pp", "3"}, 2, "--pp 3 asks for more pipeline stages than the model's 2 blocks"},
      {2,
       {"--pp", "2", "--pp-partition", "1,2"},
       2,
       "--pp-partition must be uniform, auto or 2 positive block counts"},
      {2, {"--pp", "2", "--shard", "auto"}, 1, "--pp 2 with --shard auto or --split-ops 1"},
      {2,
       {"--pp", "2", "--micro-batch-order", "layer-major"},
       2,
       "drop --micro-batch-order layer-major"},
      {4,
       {"--pp", "2", "--dp", "2", "--shard", "all", "--micro-batch", "1"},
       2,
       "give one micro-batch per rank (--micro-batch 0) or --shard none"},
      {2, {"--tp", "2", "--shard", "all"}, 1, "--shard all with --tp 2 is not built yet"},
      {2, {"--tp", "2", "--engine", "memory"}, 2, "--tp 2 runs the paged engine"},
  };
  for (const Case& c : cases) {
    RunResult r = RunMpi({with(c.flags)}, c.ranks, dir);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.says << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

TEST(TrainDpRefusals, DpWithoutMpirunSaysHowToLaunch) {
  ScratchDir scratch("train_dp_alone");
  RunResult r = RunStrata({"train", "--model", "tiny", "--steps", "1", "--dp", "2"},
                          scratch.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("mpirun -np 2"), std::string::npos) << r.err;
}

TEST(TrainDpRefusals, NcclWithoutAGpuIsOneLine) {
  ScratchDir scratch("train_dp_nccl");
  RunResult r = RunStrata({"train", "--model", "tiny", "--steps", "1", "--comm", "nccl"},
                          scratch.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--comm nccl"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace strata::testing
