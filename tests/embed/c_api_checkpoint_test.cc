// Dropping checkpoints (Note [Dropping checkpoints] in embed/checkpoint_book.h):
// strata_checkpoint_drop, the option keep_checkpoints, the leftovers of a kill between the
// record and the manifest's deletion, and the advice of a full NVMe store in the C API's terms.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/embed/embed_test_util.h"
#include "tests/embed/format1_record.h"

namespace strata::embed::test {
namespace {

bool Says(const std::string& part) { return LastError().find(part) != std::string::npos; }

constexpr size_t kFloats = 16384;  // 64 KiB: one page each

// Two tensors in two groups, a page each, so every checkpoint after a write of both holds two
// page versions of its own.
struct Store {
  Options options;
  strata_runtime* rt = nullptr;
  strata_tensor a = nullptr, b = nullptr;

  explicit Store(const std::string& name, Options extra = {}) {
    const std::string dir = FreshDir(name);
    options = {{"host_mem", "320K"},
               {"page_size", "64K"},
               {"nvme_dir", dir + "/nvme"},
               {"checkpoint_dir", dir + "/ckpt"}};
    options.insert(options.end(), extra.begin(), extra.end());
  }

  void open(Options extra = {}) {
    Options o = options;
    o.insert(o.end(), extra.begin(), extra.end());
    ASSERT_STRATA_OK(MakeRuntime(o, &rt));
    ASSERT_STRATA_OK(
        strata_register(rt, "a", kFloats * 4, STRATA_F32, STRATA_ROLE_OTHER, "ga", &a));
    ASSERT_STRATA_OK(
        strata_register(rt, "b", kFloats * 4, STRATA_F32, STRATA_ROLE_OTHER, "gb", &b));
  }

  void write(float value) {
    WriteFloats(rt, a, std::vector<float>(kFloats, value));
    WriteFloats(rt, b, std::vector<float>(kFloats, -value));
  }

  float value() { return ReadFloats(rt, a, 1)[0]; }

  uint64_t nvme_bytes() {
    strata_stats s{};
    EXPECT_STRATA_OK(strata_get_stats(rt, &s));
    return s.nvme_bytes;
  }

  void close() { EXPECT_STRATA_OK(strata_runtime_close(rt)); }

  std::string record() const { return options[3].second + "/strata_checkpoints.json"; }
};

TEST(CApiCheckpointDrop, DropForgetsTheCheckpointAndFreesItsPages) {
  Store s("drop");
  s.open();
  s.write(1.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c1"));
  s.write(2.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c2"));
  const uint64_t before = s.nvme_bytes();
  ASSERT_STRATA_OK(strata_checkpoint_drop(s.rt, "c1"));
  EXPECT_EQ(s.nvme_bytes(), before - (128 << 10)) << "c1's two page versions were not freed";
  EXPECT_EQ(s.value(), 2.0f);  // the tensors are unchanged
  EXPECT_EQ(strata_checkpoint_drop(s.rt, "c1"), STRATA_NOT_FOUND);
  EXPECT_TRUE(Says("no checkpoint 'c1'")) << LastError();
  EXPECT_TRUE(Says("(it has: c2)")) << LastError();
  EXPECT_EQ(strata_checkpoint_drop(s.rt, "bad name"), STRATA_INVALID_ARGUMENT);
  s.close();
  strata_runtime* rt = nullptr;
  Options o = s.options;
  o.push_back({"resume", "c1"});
  EXPECT_EQ(MakeRuntime(o, &rt), STRATA_NOT_FOUND);
  s.open({{"resume", "c2"}});
  EXPECT_EQ(s.value(), 2.0f);
  s.close();
}

TEST(CApiCheckpointDrop, TheCheckpointResumedFromMayBeDroppedBeforeAnyAcquire) {
  Store s("drop_resumed");
  s.open();
  s.write(1.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c1"));
  s.close();
  s.open({{"resume", "c1"}});
  ASSERT_STRATA_OK(strata_checkpoint_drop(s.rt, "c1"));
  EXPECT_EQ(s.value(), 1.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c2"));
  s.close();
}

TEST(CApiCheckpointDrop, KeepCheckpointsKeepsTheNewestK) {
  Store s("keep", {{"keep_checkpoints", "2"}});
  s.open();
  uint64_t after_second = 0;
  for (int i = 1; i <= 5; ++i) {
    s.write(float(i));
    ASSERT_STRATA_OK(strata_checkpoint(s.rt, ("c" + std::to_string(i)).c_str()));
    if (i == 2) after_second = s.nvme_bytes();
    if (i > 2) {
      EXPECT_EQ(s.nvme_bytes(), after_second) << "after c" << i;
    }
  }
  EXPECT_EQ(strata_checkpoint_drop(s.rt, "c3"), STRATA_NOT_FOUND);
  EXPECT_TRUE(Says("(it has: c5, c4)")) << LastError();
  s.close();
  s.open({{"resume", "c4"}});
  EXPECT_EQ(s.value(), 4.0f);
  s.close();
  strata_runtime* rt = nullptr;
  EXPECT_EQ(MakeRuntime({{"host_mem", "1M"}, {"keep_checkpoints", "2"}}, &rt),
            STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("keep_checkpoints needs checkpoint_dir")) << LastError();
}

// The record stops listing a checkpoint before its manifest is deleted: a kill in between
// leaves the manifest, which a resume deletes. Here the record of before c2 is put back.
TEST(CApiCheckpointDrop, AResumeDeletesManifestsNoRecordLists) {
  Store s("unlisted");
  s.open();
  s.write(1.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c1"));
  const uint64_t one = s.nvme_bytes();
  const std::string saved = s.record() + ".c1";
  std::filesystem::copy_file(s.record(), saved);
  s.write(2.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c2"));
  s.close();
  std::filesystem::rename(saved, s.record());
  s.open({{"resume", "c1"}});
  EXPECT_EQ(s.value(), 1.0f);
  EXPECT_EQ(s.nvme_bytes(), one) << "c2's manifest, listed by no record, still holds its pages";
  s.close();
}

// 8 slots of 64 KiB; each checkpoint after a write of both tensors takes 2.
TEST(CApiCheckpointDrop, AFullStoreAdvisesTheCApisRemedies) {
  Store s("full", {{"nvme_mem", "512K"}});
  s.open();
  int saved = 0;
  strata_status status = STRATA_OK;
  for (int i = 1; i <= 8 && status == STRATA_OK; ++i) {
    s.write(float(i));
    status = strata_checkpoint(s.rt, ("c" + std::to_string(i)).c_str());
    if (status == STRATA_OK) saved = i;
  }
  ASSERT_EQ(status, STRATA_RESOURCE_EXHAUSTED) << "the store never filled";
  EXPECT_TRUE(Says("NVMe store is full")) << LastError();
  EXPECT_TRUE(Says("strata_checkpoint_drop")) << LastError();
  EXPECT_TRUE(Says("keep_checkpoints")) << LastError();
  EXPECT_TRUE(Says("with a larger nvme_mem")) << LastError();
  EXPECT_FALSE(Says("strata ckpt")) << LastError();
  EXPECT_FALSE(Says("--")) << LastError();
  // The advice holds: dropping the oldest makes room for the next.
  ASSERT_STRATA_OK(strata_checkpoint_drop(s.rt, "c1"));
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "again"));
  EXPECT_EQ(s.value(), float(saved + 1));
  s.close();
  // So does reopening with a larger nvme_mem.
  s.open({{"resume", "again"}, {"nvme_mem", "1M"}});
  for (int i = 0; i < 3; ++i) {
    s.write(float(100 + i));
    ASSERT_STRATA_OK(strata_checkpoint(s.rt, ("big" + std::to_string(i)).c_str()));
  }
  s.close();
}

// Item 5 of issue 32: the C API's checkpoints are in the trainer's record format. A format-1
// record, byte for byte what the C API wrote before (Note [Format-1 records] in
// embed/checkpoint_book.h), still resumes; the next checkpoint rewrites it in format 2.
using embed::fixtures::kFormat1Record;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CApiCheckpointRecord, AFormat1RecordOfAnOlderStrataStillResumes) {
  Store s("format1");
  s.open();
  s.write(1.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c1"));
  s.close();
  std::ofstream(s.record(), std::ios::binary | std::ios::trunc) << kFormat1Record;
  s.open({{"resume", "c1"}});
  EXPECT_EQ(s.value(), 1.0f);
  s.close();
  EXPECT_EQ(Contents(s.record()), kFormat1Record) << "a resume alone rewrote the record";
  s.open({{"resume", "c1"}});
  s.write(2.0f);
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c2"));
  s.close();
  const std::string now = Contents(s.record());
  EXPECT_NE(now.find("\"format\": 2"), std::string::npos) << now;
  EXPECT_NE(now.find("\"checksum\""), std::string::npos) << now;
  s.open({{"resume", "c1"}});  // the older entry, carried into format 2
  EXPECT_EQ(s.value(), 1.0f);
  s.close();
  s.open({{"resume", "c2"}});
  EXPECT_EQ(s.value(), 2.0f);
  s.close();
}

TEST(CApiCheckpointRecord, AFormat1CheckpointOfOtherTensorsIsRefusedAsBefore) {
  Store s("format1_other");
  s.open();
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c1"));
  s.close();
  std::string text = kFormat1Record;
  text.replace(text.find("\"gb\""), 4, "\"gz\"");
  std::ofstream(s.record(), std::ios::binary | std::ios::trunc) << text;
  s.open({{"resume", "c1"}});
  void* p = nullptr;  // the first acquire seals the layout, which checks it
  EXPECT_EQ(strata_acquire(s.rt, s.a, STRATA_OVERWRITE, STRATA_TIER_HOST, &p),
            STRATA_FAILED_PRECONDITION);
  EXPECT_TRUE(Says("checkpoint 'c1' was saved with other tensors")) << LastError();
  EXPECT_TRUE(Says("(tensor 1 was 'b' (65536 bytes, dtype 0, role 3, group 'gz'), now 'b' "
                   "(65536 bytes, dtype 0, role 3, group 'gb'))"))
      << LastError();
  strata_runtime_close(s.rt);
}

// A byte flipped inside a value: the record still parses, its checksum does not match.
TEST(CApiCheckpointRecord, ACorruptedRecordIsRefusedSayingWhatWhereAndWhatToDo) {
  Store s("corrupt");
  s.open();
  ASSERT_STRATA_OK(strata_checkpoint(s.rt, "c1"));
  s.close();
  std::string text = Contents(s.record());
  const auto pos = text.find("\"name\": \"c1\"");
  ASSERT_NE(pos, std::string::npos) << text;
  text[pos + 10] = '2';  // "c1" -> "c2"
  std::ofstream(s.record(), std::ios::binary | std::ios::trunc) << text;
  strata_runtime* rt = nullptr;
  Options o = s.options;
  o.push_back({"resume", "c1"});
  EXPECT_EQ(MakeRuntime(o, &rt), STRATA_CORRUPTION);
  EXPECT_TRUE(Says(s.record() + ": checksum mismatch (recorded ")) << LastError();
  EXPECT_TRUE(Says("put back the file Strata wrote")) << LastError();
  EXPECT_TRUE(Says("set the option resume to its name")) << LastError();
  EXPECT_FALSE(Says("--")) << LastError();
}

}  // namespace
}  // namespace strata::embed::test
