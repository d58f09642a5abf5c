// memory/checkpoint_record.h: the one checkpoint record, as the trainer (numbered entries) and
// the C API (named entries with their own fingerprints) use it; its checksum, its order, the
// newest K kept, and errors that state facts (the callers word the advice).
#include "memory/checkpoint_record.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace strata::memory {
namespace {

// What scheduler/checkpoint.cc's CheckpointRecordJson wrote before the record moved here (that
// code, run on this record at 0942f3a): a numbered record is still written byte for byte so.
constexpr const char* kTrainerRecordBefore = R"({
 "checkpoints": [
  {
   "manifest": "step-00000006",
   "step": 6
  },
  {
   "manifest": "step-00000004",
   "step": 4
  }
 ],
 "checksum": "8f78403d8bfcbec7",
 "fingerprint": {
  "--data": "builtin",
  "--lr": "0.001"
 },
 "format": 2,
 "manifest": "step-00000006",
 "nvme_dirs": [
  "/nvme0",
  "/nvme1"
 ],
 "run": "gpt batch 4",
 "step": 6,
 "store_id": "00112233445566ff"
}
)";

CheckpointRecord Numbered() {
  CheckpointRecord r;
  r.run = "gpt batch 4";
  r.store_id = "00112233445566ff";
  r.nvme_dirs = {"/nvme0", "/nvme1"};
  r.fingerprint = {{"--lr", "0.001"}, {"--data", "builtin"}};
  r.set_checkpoints({{4, "step-00000004"}, {6, "step-00000006"}});
  return r;
}

CheckpointEntry Named(const std::string& name, long step) {
  return {step, "embed-" + name, name, {{"page_size", "65536"}, {"tensors", "0"}}};
}

TEST(CheckpointRecordShared, ANumberedRecordIsWrittenAsTheTrainerWroteIt) {
  EXPECT_EQ(CheckpointRecordJson(Numbered()), kTrainerRecordBefore);
  auto back = ParseCheckpointRecord(kTrainerRecordBefore, "ckpt/checkpoint.json");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->checkpoints, Numbered().checkpoints);
}

// A runtime resumed from an older checkpoint saves one with a lower step than one listed: named
// checkpoints keep the order they were made in, and each has its own fingerprint.
TEST(CheckpointRecordShared, NamedEntriesKeepTheirOrderAndFingerprints) {
  CheckpointRecord r;
  EXPECT_TRUE(r.push_newest(Named("late", 9), 0).empty());
  CheckpointEntry early = Named("early", 3);
  early.fingerprint["tensors"] = "1";
  EXPECT_TRUE(r.push_newest(early, 0).empty());
  EXPECT_EQ(r.step, 3);
  EXPECT_EQ(r.manifest, "embed-early");
  const std::string json = CheckpointRecordJson(r);
  EXPECT_NE(json.find("\"checksum\""), std::string::npos);
  auto back = ParseCheckpointRecord(json, "d/strata_checkpoints.json");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->checkpoints.size(), 2u);
  EXPECT_EQ(back->checkpoints[0], early);
  EXPECT_EQ(back->checkpoints[1], Named("late", 9));
  EXPECT_EQ(back->find_named("late")->step, 9);
  EXPECT_TRUE(back->lists_manifest("embed-late"));
  EXPECT_FALSE(back->lists_manifest("embed-none"));
}

TEST(CheckpointRecordShared, PushNewestKeepsTheNewestK) {
  CheckpointRecord named;
  for (const char* n : {"a", "b", "c"}) EXPECT_TRUE(named.push_newest(Named(n, 1), 0).empty());
  // Saving "b" again replaces it in place of newest; its manifest is reused, not retired.
  std::vector<CheckpointEntry> gone = named.push_newest(Named("b", 2), 2);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].manifest, "embed-a");
  ASSERT_EQ(named.checkpoints.size(), 2u);
  EXPECT_EQ(named.checkpoints[0].name, "b");
  EXPECT_EQ(named.checkpoints[1].name, "c");

  // Numbered: a resume from step 4 of {6, 4, 2} saves step 5; 6 is gone with the oldest.
  CheckpointRecord numbered;
  numbered.set_checkpoints({{2, "step-00000002"}, {4, "step-00000004"}, {6, "step-00000006"}});
  gone = numbered.push_newest({5, "step-00000005"}, 2);
  EXPECT_EQ(numbered.steps_text(), "5, 4");
  ASSERT_EQ(gone.size(), 2u);
  EXPECT_EQ(gone[0].step, 6);
  EXPECT_EQ(gone[1].step, 2);
}

TEST(CheckpointRecordShared, AFlippedByteIsRefusedNamingTheFileAndBothSums) {
  CheckpointRecord r;
  (void)r.push_newest(Named("c1", 20), 0);
  std::string text = CheckpointRecordJson(r);
  const auto pos = text.find("\"step\": 20");
  ASSERT_NE(pos, std::string::npos);
  text[pos + 9] = '1';  // 20 -> 21: still JSON, no longer what was summed
  auto back = ParseCheckpointRecord(text, "d/strata_checkpoints.json");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  const std::string m = back.status().message();
  EXPECT_NE(m.find("d/strata_checkpoints.json: checksum mismatch (recorded "), std::string::npos)
      << m;
  EXPECT_NE(m.find("put back the file Strata wrote"), std::string::npos) << m;
  EXPECT_EQ(m.find("--"), std::string::npos) << "a flag, below tools/: " << m;
  ASSERT_NE(DetailOf<CheckpointRecordFault>(back.status()), nullptr);
  EXPECT_EQ(DetailOf<CheckpointRecordFault>(back.status())->kind,
            CheckpointRecordFault::Kind::kChecksum);
  EXPECT_EQ(DetailOf<CheckpointRecordFault>(back.status())->path, "d/strata_checkpoints.json");
}

TEST(CheckpointRecordShared, RefusesMixedOrRepeatedEntriesAndOtherFormats) {
  CheckpointRecord mixed;
  mixed.checkpoints = {Named("a", 2), {1, "step-00000001"}};
  mixed.step = 2;
  mixed.manifest = "embed-a";
  CheckpointRecord twice;
  twice.checkpoints = {Named("a", 2), Named("a", 1)};
  twice.step = 2;
  twice.manifest = "embed-a";
  for (const CheckpointRecord& r : {mixed, twice}) {
    auto back = ParseCheckpointRecord(CheckpointRecordJson(r), "x.json");
    ASSERT_FALSE(back.ok());
    EXPECT_EQ(DetailOf<CheckpointRecordFault>(back.status())->kind,
              CheckpointRecordFault::Kind::kNotARecord);
    EXPECT_NE(back.status().message().find("x.json is not a Strata checkpoint record"),
              std::string::npos)
        << back.status().to_string();
  }
  auto v1 = ParseCheckpointRecord(R"({"format": 1, "checkpoints": []})", "x.json");
  ASSERT_FALSE(v1.ok());
  EXPECT_EQ(v1.status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(DetailOf<CheckpointRecordFault>(v1.status())->kind,
            CheckpointRecordFault::Kind::kFormat);
}

TEST(CheckpointRecordShared, WritesAndReadsBackUnderTheCallersFileName) {
  const std::string dir = ::testing::TempDir() + "/checkpoint_record_shared";
  std::filesystem::remove_all(dir);
  auto none = ReadCheckpointRecord(dir, "book.json");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  CheckpointRecord r;
  (void)r.push_newest(Named("c1", 1), 0);
  ASSERT_TRUE(WriteCheckpointRecord(dir, "book.json", r, "the directory").ok());
  auto back = ReadCheckpointRecord(dir, "book.json");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->checkpoints, r.checkpoints);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata::memory
