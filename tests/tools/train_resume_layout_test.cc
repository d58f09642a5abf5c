// --resume under the layout that wrote the checkpoint, or a refusal in words (tools/resume_dirs.h,
// scheduler/run_fingerprint.h): a rank's directory opened alone, a one-process run's directories
// given to a job of two ranks, a job's directories given to one process, --resume with nothing
// to continue, --shard changed, and --resume-from over newer checkpoints. Every mpirun has its own
// --timeout, so a hung collective fails the test instead of stalling it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

// The tiny model, paged through NVMe, a checkpoint after every `every` steps.
std::vector<std::string> Args(const std::string& dir, int steps, const std::string& tag,
                              int every = 2) {
  return {"train",        "--model",       "tiny",          "--batch",
          "8",            "--seq",         "32",            "--steps",
          std::to_string(steps), "--threads", "1",           "--lr",
          "1e-3",         "--page-size",   "64K",           "--ckpt-every",
          std::to_string(every), "--nvme-dir", dir + "/nvme", "--ckpt-dir",
          dir + "/ckpt",  "--log-json",    dir + "/" + tag + ".jsonl"};
}

std::vector<std::string> With(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A refusal ends a job in order: one line from rank 0, none of OpenMPI's abort texts.
void ExpectOrderlyRefusal(const RunResult& r) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(CountOf(r.err, "strata: error:"), 1u) << r.err;
  EXPECT_EQ(r.err.find("MPI_ABORT"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ORTE_ERROR_LOG"), std::string::npos) << r.err;
}

// Issue 29 item 1: rank 0's directories of a dp 2 job, resumed by one process, continued with
// micro-batches of 8 rows where the job's were 4: other arithmetic, exit 0. Now refused, saying
// which job wrote it and how to resume it; the job's own directories without mpirun likewise.
TEST(TrainResumeLayout, ARankDirectoryOrAJobsDirectoriesInOneProcessAreRefused) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("resume_layout_rank_dir");
  const std::string& dir = scratch.path();
  RunResult job = RunMpi({With(Args(dir, 4, "job"), {"--dp", "2"})}, 2, dir);
  ASSERT_EQ(job.exit_code, 0) << job.err;

  std::vector<std::string> alone = Args(dir, 6, "alone");
  for (size_t i = 0; i + 1 < alone.size(); ++i) {
    if (alone[i] == "--nvme-dir" || alone[i] == "--ckpt-dir") alone[i + 1] += "/rank-0";
  }
  RunResult r = RunStrata(With(alone, {"--resume"}), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is rank 0's directory of a job of 2 ranks (--dp 2 --tp 1 --pp 1)"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mpirun -np 2 strata train ... --resume --ckpt-dir " + dir + "/ckpt"),
            std::string::npos) << r.err;

  // Item 10: the job's --ckpt-dir, without mpirun.
  r = RunStrata(With(Args(dir, 6, "alone"), {"--resume"}), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("was written by a job of 2 ranks"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mpirun -np 2 strata train"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("is not empty"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/alone.jsonl")) << "a refused run opened its log";

  // The job itself resumes.
  RunResult resumed = RunMpi({With(Args(dir, 6, "job"), {"--dp", "2", "--resume"})}, 2, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming after step 4"), std::string::npos) << resumed.err;
}

// Item 2: a job of 2 ranks given a one-process run's directories with --resume made rank-0/ and
// rank-1/ stores inside them and started over from step 1, exit 0. Now refused, nothing created.
TEST(TrainResumeLayout, AOneProcessRunsDirectoriesInAJobOfTwoRanksAreRefusedUntouched) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("resume_layout_one_process");
  const std::string& dir = scratch.path();
  fs::create_directories(dir + "/nvme");
  RunResult one = RunStrata(Args(dir, 4, "one"), dir);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string record = ReadWholeFile(dir + "/ckpt/checkpoint.json");

  RunResult r = RunMpi({With(Args(dir, 6, "job"), {"--dp", "2", "--resume"})}, 2, dir);
  ExpectOrderlyRefusal(r);
  EXPECT_NE(r.err.find("was written by a one-process run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("strata train ... (one process, no mpirun) --resume"), std::string::npos)
      << r.err;
  for (const char* made : {"/ckpt/rank-0", "/ckpt/rank-1", "/nvme/rank-0", "/nvme/rank-1"}) {
    EXPECT_FALSE(fs::exists(dir + made)) << made << " was created";
  }
  EXPECT_EQ(ReadWholeFile(dir + "/ckpt/checkpoint.json"), record);

  RunResult resumed = RunStrata(With(Args(dir, 6, "one"), {"--resume"}), dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming after step 4"), std::string::npos) << resumed.err;
}

// Item 16: --ckpt-every above --steps writes no checkpoint; --resume then started over at step 1
// ("N pages found on NVMe" read as if state was found). Now --resume says there is none, `ckpt
// verify` says so, and a run without --resume starts the store over.
TEST(TrainResumeLayout, ResumeWithoutACheckpointIsRefusedAndANewRunStartsOver) {
  ScratchDir scratch("resume_layout_none");
  const std::string& dir = scratch.path();
  fs::create_directories(dir + "/nvme");
  RunResult empty = RunStrata(With(Args(dir, 3, "a"), {"--resume"}), dir);
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_NE(empty.err.find("holds no checkpoint record"), std::string::npos) << empty.err;
  EXPECT_FALSE(fs::exists(dir + "/nvme/strata.catalog")) << "--resume created a store";

  RunResult first = RunStrata(Args(dir, 3, "a", /*every=*/50), dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunResult r = RunStrata(With(Args(dir, 3, "b", 50), {"--resume"}), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("lists no checkpoint yet"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("without --resume"), std::string::npos) << r.err;

  RunResult verify = RunStrata({"ckpt", "verify", dir + "/ckpt"}, dir);
  EXPECT_EQ(verify.exit_code, 1) << verify.err;
  EXPECT_NE(verify.err.find("no checkpoint to verify"), std::string::npos) << verify.err;
  RunResult list = RunStrata({"ckpt", "list", dir + "/ckpt"}, dir);
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("no checkpoint yet"), std::string::npos) << list.out;

  RunResult again = RunStrata(Args(dir, 3, "c", 50), dir);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("starting it over"), std::string::npos) << again.err;
  EXPECT_EQ(LossesByStep(dir + "/c.jsonl"), LossesByStep(dir + "/a.jsonl"));
}

// Item 11: --shard all over a --shard none checkpoint said "--shard dp 2, blocks 0-3: sharded
// differs from the checkpoint's (not recorded)" and OpenMPI printed ORTE_ERROR_LOG. Now both
// layouts in words, and the job ends in order.
TEST(TrainResumeLayout, AnotherShardIsRefusedInWordsAndTheJobEndsInOrder) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("resume_layout_shard");
  const std::string& dir = scratch.path();
  RunResult job = RunMpi({With(Args(dir, 2, "job"), {"--dp", "2", "--shard", "none"})}, 2, dir);
  ASSERT_EQ(job.exit_code, 0) << job.err;
  RunResult r =
      RunMpi({With(Args(dir, 4, "job"), {"--dp", "2", "--shard", "all", "--resume"})}, 2, dir);
  ExpectOrderlyRefusal(r);
  EXPECT_NE(r.err.find("--shard lays out this run's state as dp 2, blocks 0-3: sharded"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the checkpoint's as none (every rank holds every block whole: --shard "
                       "none)"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not recorded"), std::string::npos) << r.err;
}

// Item 17: --resume-from deleted the newer checkpoints before training, unannounced. Now refused
// naming them; --discard-newer drops them and resumes exactly.
TEST(TrainResumeLayout, ResumeFromAnOlderCheckpointNeedsDiscardNewer) {
  ScratchDir scratch("resume_layout_discard");
  const std::string& dir = scratch.path();
  fs::create_directories(dir + "/nvme");
  RunResult whole = RunStrata(With(Args(dir, 6, "whole"), {"--keep-checkpoints", "3"}), dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::string record = ReadWholeFile(dir + "/ckpt/checkpoint.json");
  RunResult r = RunStrata(With(Args(dir, 6, "again"), {"--resume-from", "2"}), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("lists newer checkpoints (steps 6, 4)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--discard-newer"), std::string::npos) << r.err;
  EXPECT_EQ(ReadWholeFile(dir + "/ckpt/checkpoint.json"), record) << "the record changed";
  RunResult list = RunStrata({"ckpt", "list", dir + "/ckpt"}, dir);
  EXPECT_NE(list.out.find("3 checkpoint(s)"), std::string::npos) << list.out;

  RunResult lone = RunStrata(With(Args(dir, 6, "again"), {"--resume", "--discard-newer"}), dir);
  EXPECT_EQ(lone.exit_code, 2) << lone.err;
  EXPECT_NE(lone.err.find("give --resume-from STEP with it"), std::string::npos) << lone.err;

  RunResult resumed =
      RunStrata(With(Args(dir, 6, "again"), {"--resume-from", "2", "--discard-newer"}), dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("drops the newer checkpoints of steps 6, 4"), std::string::npos)
      << resumed.err;
  const auto want = LossesByStep(dir + "/whole.jsonl");
  const auto got = LossesByStep(dir + "/again.jsonl");
  ASSERT_EQ(got.size(), 4u);
  for (const auto& [step, loss] : got) EXPECT_EQ(loss, want.at(step)) << "step " << step;
}

}  // namespace
}  // namespace strata::testing
