// scheduler/checkpoint.h: the record's format, its checksum and ParseCheckpointRecord's
// contract (pure; never throws; Corruption naming the file).
#include "scheduler/checkpoint.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "scheduler/run_fingerprint.h"

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
  auto now = MakeRunFingerprint(o, c, 64, 16384);
  ASSERT_TRUE(now.ok());
  std::map<std::string, std::string> recorded = now->to_map();
  EXPECT_TRUE(CheckSameRun(*now, recorded).ok());
  recorded["--lr"] = "0.001";
  Status s = CheckSameRun(*now, recorded);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--lr 0.0003 differs from the checkpoint's 0.001"), std::string::npos)
      << s.to_string();
}

// --dtype joined the fingerprint after the first records: a record without it was fp32, and a
// bf16 run does not resume an fp32 checkpoint (or the reverse).
TEST(RunFingerprint, DtypeIsCheckedAndOlderRecordsAreFp32) {
  TrainOptions o;
  GptConfig c;
  auto fp32 = MakeRunFingerprint(o, c, 64, 16384);
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(fp32->to_map().count("--dtype"), 0u);  // the default is left out, as --shard none
  o.dtype = "bf16";
  auto bf16 = MakeRunFingerprint(o, c, 64, 16384);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->to_map().at("--dtype"), "bf16");
  EXPECT_TRUE(CheckSameRun(*fp32, fp32->to_map()).ok());
  Status s = CheckSameRun(*bf16, fp32->to_map());
  EXPECT_NE(s.message().find("--dtype bf16 differs from the checkpoint's (not recorded)"),
            std::string::npos)
      << s.to_string();
  s = CheckSameRun(*fp32, bf16->to_map());
  EXPECT_NE(s.message().find("--dtype fp32 differs from the checkpoint's bf16"), std::string::npos)
      << s.to_string();
}

}  // namespace
}  // namespace strata::scheduler
