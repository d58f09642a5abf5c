// stress/stress_judge.h: the judging of `strata stress` catches every kind of difference, so the
// soak cannot pass vacuously.
#include "stress/stress_judge.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>
#include <vector>

namespace strata::stress {
namespace {

using Losses = std::map<long, std::string>;

const Losses kRef = {{1, "\"loss\":5.5"}, {2, "\"loss\":5.25"}, {3, "\"loss\":5.125"}};

TEST(StressJudge, LossTextsSkipsLinesCutByAKill) {
  const Losses got = LossTexts(
      "{\"step\":1,\"loss\":5.5,\"lr\":0.001}\n{\"step\":2,\"loss\":5.25,\"lr\":0.001}\n"
      "{\"step\":3,\"lo");
  EXPECT_EQ(got, (Losses{{1, "\"loss\":5.5"}, {2, "\"loss\":5.25"}}));
}

TEST(StressJudge, IdenticalAttemptsPass) {
  const StressJudgement j = JudgeConfiguration(
      kRef, {{{1, "\"loss\":5.5"}, {2, "\"loss\":5.25"}}, {{2, "\"loss\":5.25"}, {3, "\"loss\":5.125"}}},
      3, true, "weights", "weights");
  EXPECT_EQ(j.mismatches, 0);
  EXPECT_FALSE(j.data_lost);
  EXPECT_TRUE(j.problems.empty());
}

TEST(StressJudge, ALossThatDiffersInTheLastDigitIsAMismatch) {
  const StressJudgement j = JudgeConfiguration(
      kRef, {{{1, "\"loss\":5.5"}, {2, "\"loss\":5.2500001"}, {3, "\"loss\":5.125"}}}, 3, true,
      "w", "w");
  EXPECT_EQ(j.mismatches, 1);
  ASSERT_EQ(j.problems.size(), 1u);
  EXPECT_NE(j.problems[0].find("step 2"), std::string::npos);
}

TEST(StressJudge, AResumedAttemptThatRedoesAStepDifferentlyIsAMismatch) {
  const StressJudgement j = JudgeConfiguration(
      kRef, {{{1, "\"loss\":5.5"}, {2, "\"loss\":5.25"}}, {{2, "\"loss\":5.3"}, {3, "\"loss\":5.125"}}},
      3, true, "w", "w");
  EXPECT_EQ(j.mismatches, 1);
}

TEST(StressJudge, WeightsThatDifferAreAMismatch) {
  const StressJudgement j = JudgeConfiguration(kRef, {kRef}, 3, true, "abcd", "abce");
  EXPECT_EQ(j.mismatches, 1);
  EXPECT_FALSE(j.data_lost);
}

TEST(StressJudge, AStepNeverLoggedOrARunNeverFinishedIsDataLost) {
  EXPECT_TRUE(JudgeConfiguration(kRef, {{{1, "\"loss\":5.5"}, {3, "\"loss\":5.125"}}}, 3, true,
                                 "w", "w")
                  .data_lost);
  const StressJudgement j = JudgeConfiguration(kRef, {kRef}, 3, false, "w", "");
  EXPECT_TRUE(j.data_lost);
  EXPECT_EQ(j.mismatches, 0) << "weights of an unfinished run are not compared";
}

TEST(StressJudge, AStepBeyondTheReferenceIsAMismatch) {
  Losses more = kRef;
  more[4] = "\"loss\":5";
  EXPECT_EQ(JudgeConfiguration(kRef, {more}, 3, true, "w", "w").mismatches, 1);
}

ChildExit Exited(int code) { return ChildExit{true, code, 0, false}; }
ChildExit Signaled(int sig) { return ChildExit{false, 0, sig, false}; }

TEST(StressJudge, ClassifyExit) {
  std::string line;
  EXPECT_EQ(ClassifyExit(Exited(0), 0, "step 1\n", &line), ExitKind::kFinished);
  EXPECT_EQ(ClassifyExit(Exited(1), 0, "step 1\nstrata: error: pwrite x: Input/output error\n",
                         &line),
            ExitKind::kCleanError);
  EXPECT_EQ(line, "strata: error: pwrite x: Input/output error");
  EXPECT_EQ(ClassifyExit(Exited(1), 0, "no error line\n", &line), ExitKind::kFailure);
  EXPECT_EQ(ClassifyExit(Exited(1), 0, "strata: error: a\nstrata: error: b\n", &line),
            ExitKind::kFailure)
      << "two error lines are not one clear line";
  EXPECT_EQ(ClassifyExit(Exited(2), 0, "strata: error: bad flag\n", &line), ExitKind::kFailure);
  EXPECT_EQ(ClassifyExit(Exited(134), 0, "", &line), ExitKind::kFailure);
  EXPECT_EQ(ClassifyExit(Exited(1), 0, "terminate called after\nstrata: error: x\n", &line),
            ExitKind::kFailure);
  EXPECT_EQ(ClassifyExit(Signaled(SIGABRT), 0, "", &line), ExitKind::kFailure);
  EXPECT_EQ(ClassifyExit(Signaled(SIGSEGV), SIGKILL, "", &line), ExitKind::kFailure);
  EXPECT_EQ(ClassifyExit(Signaled(SIGKILL), SIGKILL, "", &line), ExitKind::kStoppedByUs);
  EXPECT_EQ(ClassifyExit(Signaled(SIGTERM), SIGTERM, "", &line), ExitKind::kStoppedByUs);
  EXPECT_EQ(ClassifyExit(Exited(143), SIGTERM, "strata: stopped by SIGTERM\n", &line),
            ExitKind::kStoppedByUs);
  EXPECT_EQ(ClassifyExit(Exited(143), 0, "", &line), ExitKind::kFailure);
  ChildExit hung = Signaled(SIGKILL);
  hung.timed_out = true;
  EXPECT_EQ(ClassifyExit(hung, 0, "", &line), ExitKind::kFailure);
}

// A disk fill's attempt (issue 29): exit 1 with ENOSPC's message is the clean stop that `strata
// stress` expects, and the resumed attempts are judged by their losses like any other. The
// abort that a full disk used to cause (RocksDB's assertion, SIGABRT) is a failure, as is an
// error line without ENOSPC's text.
TEST(StressJudge, AFullDiskStopsCleanlyWithENOSPCAndAnAbortIsAFailure) {
  std::string line;
  const std::string enospc =
      "step 3\nstrata: error: catalog /d/nvme0/strata.catalog: No space left on device "
      "(ENOSPC): a write failed (IO error: No space left on device: While appending to file: "
      "/d/nvme0/strata.catalog/000004.log: No space left on device); the catalog is closed\n";
  EXPECT_EQ(ClassifyExit(Exited(1), 0, enospc, &line), ExitKind::kCleanError);
  EXPECT_TRUE(NamesDiskFull(line)) << line;
  const std::string abort_text =
      "step 3\nstrata: ./file/writable_file_writer.h:312: rocksdb::IOStatus "
      "rocksdb::WritableFileWriter::AssertFalseAndGetStatusForPrevError(): Assertion "
      "`sync_without_flush_called_' failed.\n";
  EXPECT_EQ(ClassifyExit(Signaled(SIGABRT), 0, abort_text, &line), ExitKind::kFailure);
  EXPECT_EQ(ClassifyExit(Exited(134), 0, abort_text, &line), ExitKind::kFailure);
  EXPECT_EQ(
      ClassifyExit(Exited(1), 0, abort_text + "strata: error: No space left on device\n", &line),
      ExitKind::kFailure)
      << "an assertion's text is a crash even before an error line";
  EXPECT_FALSE(NamesDiskFull("strata: error: pwrite x: Input/output error"));
  // Stopped at step 3 by the full disk, resumed from the checkpoint of step 2 after the space
  // was freed: the redone and later steps must be the reference's.
  const Losses filled = {{1, "\"loss\":5.5"}, {2, "\"loss\":5.25"}, {3, "\"loss\":5.125"}};
  EXPECT_EQ(
      JudgeConfiguration(kRef, {filled, {{3, "\"loss\":5.125"}}}, 3, true, "w", "w").mismatches, 0);
  EXPECT_EQ(
      JudgeConfiguration(kRef, {filled, {{3, "\"loss\":5.126"}}}, 3, true, "w", "w").mismatches, 1);
}

// A rank-count change on resume (issue 29): exit 2, one line naming a one-process run, nothing
// created. Exit 0 (the old start over), a second line, or made directories are failures.
TEST(StressJudge, ARankChangeMustBeRefusedInOrderAndTouchNothing) {
  const std::string refused =
      "strata: error: --resume: --ckpt-dir /d/ckpt was written by a one-process run "
      "(/d/ckpt/checkpoint.json), and this is a job of 2 ranks; ...\nPrimary job terminated\n";
  EXPECT_EQ(RankChangeProblem(Exited(2), refused, false), "");
  EXPECT_NE(RankChangeProblem(Exited(0), "step 1\n", false), "");
  EXPECT_NE(RankChangeProblem(Exited(2), refused, true), "");
  EXPECT_NE(RankChangeProblem(Exited(2), refused + "strata: error: rank 1 of 2: x\n", false), "");
  EXPECT_NE(RankChangeProblem(Exited(2), "strata: error: --batch ...\n", false), "");
  // A wrong refusal shows what was printed, so that a rare one can be understood from the log.
  EXPECT_NE(RankChangeProblem(Exited(2), "strata: error: --batch 7\n", false).find("--batch 7"),
            std::string::npos);
  EXPECT_NE(RankChangeProblem(Signaled(SIGABRT), refused, false), "");
}

TEST(StressJudge, InjectedCountAndSuggestedResumeStep) {
  EXPECT_EQ(InjectedCount("step 1\nstrata: inject-faults: 3 requests failed\n"), 3);
  EXPECT_EQ(InjectedCount("step 1\n"), -1);
  EXPECT_EQ(SuggestedResumeStep("strata: error: --resume: checkpoint step 6 is damaged: checksum "
                                "mismatch; older checkpoints: step 4, 2; resume from one with "
                                "--resume --resume-from 4"),
            4);
  EXPECT_EQ(SuggestedResumeStep("strata: error: no older checkpoint is kept"), -1);
}

}  // namespace
}  // namespace strata::stress
