// scheduler/checkpoint.h: the record's format, its checksum and ParseCheckpointRecord's
// contract (pure; never throws; Corruption naming the file).
#include "scheduler/checkpoint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "core/util/option.h"
#include "memory/open_nvme_tier.h"
#include "models/gpt2/gpt_config.h"
#include "scheduler/checkpoint_store.h"
#include "scheduler/run_fingerprint.h"
#include "tests/common/expect_fault.h"
#include "tests/common/scratch_dir.h"

namespace strata::scheduler {
namespace {

CheckpointRecord Sample() {
  CheckpointRecord r;
  r.run = "gpt(...) batch 4 micro 0 seq 64 page 16384 seed 7";
  r.store_id = "00112233445566ff";
  r.nvme_dirs = {"/nvme0", "/nvme1"};
  r.fingerprint = {{"--lr", "0.001"}, {"--data", "builtin"}};
  r.set_checkpoints({{4, "step-00000004"}, {6, "step-00000006"}});
  return r;
}

TEST(CheckpointRecord, RoundTripsNewestFirst) {
  const CheckpointRecord r = Sample();
  EXPECT_EQ(r.step, 6);
  EXPECT_EQ(r.manifest, "step-00000006");
  auto back = ParseCheckpointRecord(CheckpointRecordJson(r), "ckpt/checkpoint.json");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->format, kCheckpointFormat);
  EXPECT_EQ(back->checkpoints, r.checkpoints);
  EXPECT_EQ(back->store_id, r.store_id);
  EXPECT_EQ(back->nvme_dirs, r.nvme_dirs);
  EXPECT_EQ(back->fingerprint, r.fingerprint);
  EXPECT_EQ(back->run, r.run);
  EXPECT_EQ(back->steps_text(), "6, 4");
}

TEST(CheckpointRecord, AnEditedValueFailsTheChecksumNamingTheFile) {
  std::string text = CheckpointRecordJson(Sample());
  const auto pos = text.find("0.001");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 5, "0.003");
  auto r = ParseCheckpointRecord(text, "ckpt/checkpoint.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("ckpt/checkpoint.json: checksum mismatch"), std::string::npos)
      << r.status().to_string();
}

TEST(CheckpointRecord, WhitespaceDoesNotMatter) {
  std::string text = CheckpointRecordJson(Sample());
  std::string compact;
  for (char c : text) {
    if (c != '\n') compact.push_back(c);
  }
  EXPECT_TRUE(ParseCheckpointRecord(compact, "x").ok());
}

TEST(CheckpointRecord, ReadsAnOlderStrataRecord) {
  auto r = ParseCheckpointRecord(
      R"({"step": 3, "manifest": "step-00000003", "run": "gpt batch 4"})", "old.json");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->format, 1);
  ASSERT_EQ(r->checkpoints.size(), 1u);
  EXPECT_EQ(r->checkpoints[0].step, 3);
  EXPECT_TRUE(r->store_id.empty());
}

TEST(CheckpointRecord, RefusesWhatIsNotARecord) {
  for (const char* text :
       {"", "[]", "{", "null", R"({"format": 2})", R"({"format": "2"})",
        R"({"step": -1, "manifest": "step-1", "run": ""})", R"({"format": 3})",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"}) {
    auto r = ParseCheckpointRecord(text, "bad.json");
    EXPECT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("bad.json"), std::string::npos) << text;
  }
}

// The fuzz contract in small: any mutation of a valid record parses or is refused, never throws.
TEST(CheckpointRecord, MutationsNeverThrow) {
  const std::string base = CheckpointRecordJson(Sample());
  std::mt19937 rng(12);
  for (int i = 0; i < 2000; ++i) {
    std::string text = base;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) text[rng() % text.size()] = char(rng() % 256);
    if (rng() % 4 == 0) text.resize(rng() % text.size());
    EXPECT_NO_THROW((void)ParseCheckpointRecord(text, "m.json"));
  }
}

TEST(RunFingerprint, ADifferenceNamesTheFlagAndBothValues) {
  TrainOptions o;
  GptConfig c;
  auto now = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(now.ok());
  std::map<std::string, std::string> recorded = now->to_map();
  EXPECT_TRUE(CheckSameRun(*now, recorded).ok());
  recorded["--lr"] = "0.001";
  Status s = CheckSameRun(*now, recorded);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("{lr} 0.0003 differs from the checkpoint's 0.001"), std::string::npos)
      << s.to_string();
  // The option at fault, for code; the record keeps its key as written ("--lr").
  test_support::ExpectFault(s, Option::kLr);
  EXPECT_EQ(RecordKey(Option::kLr), "--lr");
  EXPECT_EQ(RecordKey(Option::kMicroBatchOrder), "--micro-batch-order");
  EXPECT_EQ(RecordKeyWords("--lr"), "{lr}");
  EXPECT_EQ(RecordKeyWords("rank"), "rank");
}

// --dtype joined the fingerprint after the first records: a record without it was fp32, and a
// bf16 run does not resume an fp32 checkpoint (or the reverse).
TEST(RunFingerprint, DtypeIsCheckedAndOlderRecordsAreFp32) {
  TrainOptions o;
  GptConfig c;
  auto fp32 = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(fp32->to_map().count("--dtype"), 0u);  // the default is left out, as --shard none
  o.dtype = "bf16";
  auto bf16 = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->to_map().at("--dtype"), "bf16");
  EXPECT_TRUE(CheckSameRun(*fp32, fp32->to_map()).ok());
  Status s = CheckSameRun(*bf16, fp32->to_map());
  EXPECT_NE(s.message().find("{dtype} bf16 differs from the checkpoint's fp32"),
            std::string::npos)
      << s.to_string();
  s = CheckSameRun(*fp32, bf16->to_map());
  EXPECT_NE(s.message().find("{dtype} fp32 differs from the checkpoint's bf16"), std::string::npos)
      << s.to_string();
}

// Issue 29 item 1: rank 0's checkpoint of a dp 2 job, resumed by one process, continued with
// other micro-batches. The grid, the rank and the micro-batch rows are recorded and compared,
// the grid first and in words.
TEST(RunFingerprint, TheGridTheRankAndTheMicroBatchRowsAreChecked) {
  TrainOptions o;
  GptConfig c;
  auto job = MakeRunFingerprint(o, c.to_string(), 64, 16384, {.dp = 2, .rank = 1, .micro_rows = 4});
  auto one = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(job.ok() && one.ok());
  const auto recorded = job->to_map();
  EXPECT_EQ(recorded.at("--dp"), "2");
  EXPECT_EQ(recorded.at("rank"), "1");
  EXPECT_EQ(recorded.at("micro-batch rows"), "4");
  EXPECT_EQ(one->to_map().at("micro-batch rows"), "8");  // --batch 8, one micro-batch
  EXPECT_EQ(RecordedRanks(recorded), 2);
  EXPECT_EQ(RecordedGrid(recorded), "{dp} 2 {tp} 1 {pp} 1");
  Status s = CheckSameRun(*one, recorded);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("{dp} 1 differs from the checkpoint's {dp} 2: it was written by "
                             "rank 1 of a job of 2 rank(s) ({dp} 2 {tp} 1 {pp} 1)"),
            std::string::npos)
      << s.to_string();
  test_support::ExpectFault(
      s, Option::kDp, {{"got", 1}, {"recorded", 2}, {"recorded_rank", 1}, {"recorded_ranks", 2}});
  // The same grid on another rank, and other micro-batches.
  auto rank0 =
      MakeRunFingerprint(o, c.to_string(), 64, 16384, {.dp = 2, .rank = 0, .micro_rows = 4});
  s = CheckSameRun(*rank0, recorded);
  EXPECT_NE(s.message().find("this process is rank 0 of the job but the checkpoint is rank 1's"),
            std::string::npos)
      << s.to_string();
  test_support::ExpectFault(s, Option::kCkptDir, {{"rank", 0}, {"recorded_rank", 1}});
  auto rows2 =
      MakeRunFingerprint(o, c.to_string(), 64, 16384, {.dp = 2, .rank = 1, .micro_rows = 2});
  s = CheckSameRun(*rows2, recorded);
  EXPECT_NE(s.message().find("micro-batches of 2 rows ({batch}, {micro_batch} and {dp}) but the "
                             "checkpointed run computed micro-batches of 4 rows"),
            std::string::npos)
      << s.to_string();
  test_support::ExpectFault(s, Option::kMicroBatch, {{"rows", 2}, {"recorded_rows", 4}});
  EXPECT_TRUE(CheckSameRun(*job, recorded).ok());
}

// Issue 32, item 2: another --shard layout is at fault of {shard}; a --data or --init that
// cannot be read for the fingerprint is at fault of its option.
TEST(RunFingerprint, TheShardAndTheUnreadableFilesNameTheirOption) {
  TrainOptions o;
  GptConfig c;
  auto blocks = MakeRunFingerprint(o, c.to_string(), 64, 16384, {.shard = "blocks"});
  auto none = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(blocks.ok() && none.ok());
  const Status s = CheckSameRun(*none, blocks->to_map());
  EXPECT_NE(s.message().find("{shard} lays out this run's state as"), std::string::npos)
      << s.to_string();
  test_support::ExpectFault(s, Option::kShard);
  test_support::ScratchDir dir("fingerprint");
  TrainOptions no_data = o;
  no_data.data.path = dir.path() + "/missing.txt";
  const Status data = MakeRunFingerprint(no_data, c.to_string(), 64, 16384).status();
  EXPECT_NE(data.message().find("{data}: cannot read " + no_data.data.path), std::string::npos)
      << data.to_string();
  test_support::ExpectFault(data, Option::kData);
  TrainOptions no_init = o;
  no_init.model.init_path = dir.path() + "/missing.safetensors";
  const Status init = MakeRunFingerprint(no_init, c.to_string(), 64, 16384).status();
  EXPECT_NE(init.message().find("{init}: cannot read " + no_init.model.init_path),
            std::string::npos)
      << init.to_string();
  test_support::ExpectFault(init, Option::kInit);
}

// --init given a Hugging Face directory: the fingerprint holds each file's identity, so a changed
// shard is a changed run (was "0 bytes": a directory read as an empty file).
TEST(RunFingerprint, AnInitDirectoryIsIdentifiedByItsFiles) {
  test_support::ScratchDir dir("fingerprint_dir");
  std::ofstream(dir.path() + "/config.json") << "{}";
  std::ofstream(dir.path() + "/model.safetensors") << "weights";
  TrainOptions o;
  o.model.init_path = dir.path();
  GptConfig c;
  auto before = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(before.ok()) << before.status().to_string();
  EXPECT_NE(before->init.find("model.safetensors: 7 bytes"), std::string::npos) << before->init;
  std::ofstream(dir.path() + "/model.safetensors") << "other weights";
  auto after = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(before->init, after->init);
}

// Records written before the grid was recorded do not say it: not refused for it (the CLI knows
// a rank's directory by its name, tools/resume_dirs.h), and their job size reads 0.
TEST(RunFingerprint, RecordsWithoutTheGridAreNotRefusedForIt) {
  TrainOptions o;
  GptConfig c;
  auto job = MakeRunFingerprint(o, c.to_string(), 64, 16384, {.dp = 2, .micro_rows = 4});
  ASSERT_TRUE(job.ok());
  auto older = job->to_map();
  for (const char* later : {"--dp", "--tp", "--pp", "rank", "micro-batch rows"}) older.erase(later);
  EXPECT_TRUE(CheckSameRun(*job, older).ok());
  EXPECT_EQ(RecordedRanks(older), 0);
}

// Item 20: the fingerprint (and `ckpt list`) showed --min-lr's sentinel -1. It records the rate
// the schedule uses; an older record's -1 reads as 10% of its --lr.
TEST(RunFingerprint, MinLrIsTheRateTheScheduleUses) {
  TrainOptions o;
  o.optimizer.lr = 0.5f;  // 10% of it is exact in floats: 0.05
  GptConfig c;
  auto now = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->to_map().at("--min-lr"), "0.05");
  auto older = now->to_map();
  older["--min-lr"] = "-1";
  EXPECT_TRUE(CheckSameRun(*now, older).ok());
  o.optimizer.min_lr = 0.02f;
  auto other = MakeRunFingerprint(o, c.to_string(), 64, 16384);
  ASSERT_TRUE(other.ok());
  Status s = CheckSameRun(*other, older);
  EXPECT_NE(s.message().find("{min_lr} 0.02 differs from the checkpoint's 0.05"),
            std::string::npos)
      << s.to_string();
}

// Issue 32 item 5: the record is memory/checkpoint_record.h's, shared with the C API; the
// trainer's errors keep their words, the advice in flags added here, and a record of the C
// API's named checkpoints is not a trainer's.
TEST(CheckpointRecord, TheSharedRecordsErrorsKeepTheTrainersAdvice) {
  std::string text = CheckpointRecordJson(Sample());
  text[text.find("0.001") + 4] = '3';
  auto edited = ParseCheckpointRecord(text, "ckpt/checkpoint.json");
  ASSERT_FALSE(edited.ok());
  EXPECT_NE(edited.status().message().find(
                "the record was edited or damaged after Strata wrote it; put back the file "
                "Strata wrote (to resume from an older listed checkpoint use {resume_from} STEP, "
                "never an edit)"),
            std::string::npos)
      << edited.status().to_string();
  auto bad = ParseCheckpointRecord("[]", "ckpt/checkpoint.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "ckpt/checkpoint.json is not a Strata checkpoint record (not a JSON object); put back "
            "the file Strata wrote, or start a new run in an empty {ckpt_dir} and {nvme_dir}");
  memory::CheckpointRecord named;
  (void)named.push_newest({3, "embed-c1", "c1", {{"page_size", "65536"}}}, 0);
  auto api = ParseCheckpointRecord(memory::CheckpointRecordJson(named), "ckpt/checkpoint.json");
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("named checkpoints of a C API runtime"), std::string::npos)
      << api.status().to_string();
}

// Issue 32, item 2: the resume refusals carry the option at fault (an OptionFault).
TEST(CheckpointStoreFaults, ResumeRefusalsNameTheirOption) {
  using test_support::ExpectFault;
  ExpectFault(CheckResumable(std::nullopt, "/ckpt"), Option::kResume);
  CheckpointRecord empty = Sample();
  empty.set_checkpoints({});
  ExpectFault(CheckResumable(empty, "/ckpt"), Option::kResume);
  ExpectFault(CheckStoreId(Sample(), "ffeeddccbbaa9988", "/ckpt", "/nvme0"), Option::kNvmeDir);
  CheckpointRecord no_dirs = Sample();
  no_dirs.nvme_dirs.clear();
  ExpectFault(OpenRecordStore(no_dirs, "/ckpt", {}).status(), Option::kNvmeDir);
  test_support::ScratchDir dir("ckpt-faults");
  ExpectFault(OpenRecordStore(Sample(), "/ckpt", {dir.path()}).status(), Option::kNvmeDir);
}

}  // namespace
}  // namespace strata::scheduler
