// embed/checkpoint_book.h: the C API's checkpoints in the shared record (memory/
// checkpoint_record.h): a format-1 record of the C API before it (Note [Format-1 records])
// still reads; the new record has a checksum, and a damaged one is refused saying what, where
// and what to do in the C API's terms.
#include "embed/checkpoint_book.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/embed/format1_record.h"

namespace strata::embed {
namespace {

using fixtures::kFormat1Record;

std::string Dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/checkpoint_book_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void Put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string Get(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Layout TwoTensors(const char* first = "a") {
  Layout layout(65536);
  EXPECT_TRUE(layout.add({first, 65536, 0, 3, "ga"}).ok());
  EXPECT_TRUE(layout.add({"b", 65536, 0, 3, "gb"}).ok());
  EXPECT_TRUE(layout.seal().ok());
  return layout;
}

TEST(CheckpointBook, AFormat1RecordReadsAsNamedEntriesWithTheirFingerprint) {
  const std::string dir = Dir("v1");
  Put(dir + "/strata_checkpoints.json", kFormat1Record);
  auto book = CheckpointBook::Open(dir);
  ASSERT_TRUE(book.ok()) << book.status().to_string();
  auto c1 = (*book)->find("c1");
  ASSERT_TRUE(c1.ok()) << c1.status().to_string();
  EXPECT_EQ((*c1)->manifest, "embed-c1");
  EXPECT_EQ((*c1)->step, 0);
  EXPECT_EQ((*c1)->fingerprint.at("page_size"), "65536");
  EXPECT_EQ((*c1)->fingerprint.at("tensors"), "2");
  EXPECT_TRUE(CheckpointBook::CheckLayout(**c1, TwoTensors()).ok());
  Status other = CheckpointBook::CheckLayout(**c1, TwoTensors("z"));
  EXPECT_EQ(other.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.message().find("(tensor 0 was 'a' (65536 bytes, dtype 0, role 3, group 'ga'), "
                                 "now 'z' (65536 bytes, dtype 0, role 3, group 'ga'))"),
            std::string::npos)
      << other.to_string();
  EXPECT_TRUE((*book)->lists_manifest("embed-c1"));
  EXPECT_EQ(Get(dir + "/strata_checkpoints.json"), kFormat1Record) << "reading rewrote it";
  const CheckpointBook::Entry c1_read = **c1;  // record() replaces the entries
  // The next checkpoint writes the whole record in format 2, the older entry included.
  ASSERT_TRUE((*book)->record("c2", 5, TwoTensors(), 0, {dir + "/nvme"}).ok());
  const std::string text = Get(dir + "/strata_checkpoints.json");
  auto shared = memory::ParseCheckpointRecord(text, "x");
  ASSERT_TRUE(shared.ok()) << shared.status().to_string() << "\n" << text;
  EXPECT_EQ(shared->format, 2);
  ASSERT_EQ(shared->checkpoints.size(), 2u);
  EXPECT_EQ(shared->checkpoints[0].name, "c2");
  EXPECT_EQ(shared->checkpoints[1], c1_read);
  const std::string nvme = std::filesystem::path(dir + "/nvme").lexically_normal().string();
  EXPECT_EQ(shared->nvme_dirs, std::vector<std::string>{nvme});
}

TEST(CheckpointBook, ADamagedFormat1RecordSaysToMoveItAway) {
  const std::string dir = Dir("v1_bad");
  std::string text = kFormat1Record;
  text.replace(text.find("\"page_bytes\""), 12, "\"page_bytez\"");
  Put(dir + "/strata_checkpoints.json", text);
  auto book = CheckpointBook::Open(dir);
  ASSERT_FALSE(book.ok());
  EXPECT_EQ(book.status().code(), StatusCode::kCorruption);
  EXPECT_NE(book.status().message().find(dir + "/strata_checkpoints.json is not a checkpoint "
                                         "record of Strata's embedding API"),
            std::string::npos)
      << book.status().to_string();
  EXPECT_NE(book.status().message().find("move it away"), std::string::npos);
}

std::string RecordOfC1(const std::string& dir) {
  auto book = CheckpointBook::Open(dir);
  EXPECT_TRUE(book.ok());
  EXPECT_TRUE((*book)->record("c1", 20, TwoTensors(), 0, {dir + "/nvme"}).ok());
  return Get(dir + "/strata_checkpoints.json");
}

// A byte flipped inside a value leaves JSON that parses: the checksum finds it.
TEST(CheckpointBook, AFlippedByteIsRefusedSayingWhatWhereAndWhatToDo) {
  const std::string dir = Dir("flip");
  std::string text = RecordOfC1(dir);
  ASSERT_NE(text.find("\"checksum\""), std::string::npos) << text;
  const auto pos = text.find("\\\"ga\\\"");
  ASSERT_NE(pos, std::string::npos) << text;
  text[pos + 2] = 'x';  // group "ga" -> "xa"
  Put(dir + "/strata_checkpoints.json", text);
  auto book = CheckpointBook::Open(dir);
  ASSERT_FALSE(book.ok());
  EXPECT_EQ(book.status().code(), StatusCode::kCorruption);
  const std::string m = book.status().message();
  EXPECT_NE(m.find(dir + "/strata_checkpoints.json: checksum mismatch (recorded "), std::string::npos)
      << m;
  EXPECT_NE(m.find("put back the file Strata wrote"), std::string::npos) << m;
  EXPECT_NE(m.find("set the option resume to its name"), std::string::npos) << m;
  EXPECT_EQ(m.find("--"), std::string::npos) << "a flag in a C API message: " << m;
}

TEST(CheckpointBook, TextThatIsNotARecordIsRefusedInTheCApisTerms) {
  const std::string dir = Dir("not_json");
  std::string text = RecordOfC1(dir);
  text[text.find(':')] = ';';
  Put(dir + "/strata_checkpoints.json", text);
  auto book = CheckpointBook::Open(dir);
  ASSERT_FALSE(book.ok());
  const std::string m = book.status().message();
  EXPECT_NE(m.find("strata_checkpoints.json is not a Strata checkpoint record (not JSON)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("move it away to start afresh"), std::string::npos) << m;
  EXPECT_EQ(m.find("--"), std::string::npos) << m;
}

// A trainer's checkpoint.json copied in its place holds numbered checkpoints, not named ones.
TEST(CheckpointBook, ATrainersRecordIsNotTheCApis) {
  const std::string dir = Dir("trainer");
  memory::CheckpointRecord trainer;
  trainer.set_checkpoints({{4, "step-00000004"}});
  Put(dir + "/strata_checkpoints.json", memory::CheckpointRecordJson(trainer));
  auto book = CheckpointBook::Open(dir);
  ASSERT_FALSE(book.ok());
  EXPECT_NE(book.status().message().find("the checkpoints of a training run (step-00000004)"),
            std::string::npos)
      << book.status().to_string();
}

}  // namespace
}  // namespace strata::embed
