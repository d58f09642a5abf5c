// SafetensorsReader: a tensor's element ranges read from disk without reading the file whole,
// F16/BF16 widened in chunks, and the file's damage found at the read that meets it.
#include "core/io/safetensors_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/scratch_dir.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class SafetensorsReaderTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return scratch_.path() + "/" + name; }
  test_support::ScratchDir scratch_{"safetensors-reader"};
  const fs::path dir_{scratch_.path()};
};

TEST_F(SafetensorsReaderTest, ReadsAnyElementRangeOfAnF32Tensor) {
  std::vector<float> w(3 * 1000), b(7);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f * float(i) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = -float(i);
  ASSERT_TRUE(WriteSafetensors(Path("m.safetensors"), {{"w", {3, 1000}, w.data()},
                                                        {"b", {7}, b.data()}}, {})
                  .ok());
  auto r = SafetensorsReader::Open(Path("m.safetensors"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsEntry* e = r->find("w");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->numel, 3000u);
  EXPECT_EQ(r->find("nope"), nullptr);
  // Row 1 alone, then a range across rows.
  std::vector<float> row(1000), span(1500);
  ASSERT_TRUE(r->read(*e, 1000, 1000, row.data()).ok());
  ASSERT_TRUE(r->read(*e, 777, 1500, span.data()).ok());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(row[size_t(i)], w[size_t(1000 + i)]) << i;
  for (int i = 0; i < 1500; ++i) ASSERT_EQ(span[size_t(i)], w[size_t(777 + i)]) << i;
  std::vector<float> all(7);
  ASSERT_TRUE(r->read(*r->find("b"), 0, 7, all.data()).ok());
  EXPECT_EQ(all, b);
}

// A BF16 tensor larger than the reader's widening chunk (2^20 elements), read in a range that
// crosses a chunk boundary.
TEST_F(SafetensorsReaderTest, WidensBf16RangesAcrossItsChunks) {
  const uint64_t n = (uint64_t{1} << 20) + 4096;
  const std::string header = R"({"w":{"dtype":"BF16","shape":[)" + std::to_string(n) +
                             R"(],"data_offsets":[0,)" + std::to_string(2 * n) + "]}}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char((header.size() >> (8 * i)) & 0xff);
  file += header;
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t bits = uint16_t(0x3f80 + (i % 128));  // 1.0, 1.0078125, ...
    file.push_back(char(bits & 0xff));
    file.push_back(char(bits >> 8));
  }
  std::ofstream(Path("b.safetensors"), std::ios::binary).write(file.data(), std::streamsize(file.size()));
  auto r = SafetensorsReader::Open(Path("b.safetensors"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const uint64_t first = (uint64_t{1} << 20) - 10, count = 100;
  std::vector<float> got(count);
  ASSERT_TRUE(r->read(r->header().entries[0], first, count, got.data()).ok());
  for (uint64_t i = 0; i < count; ++i) {
    ASSERT_EQ(got[i], Bfloat16ToFloat(uint16_t(0x3f80 + ((first + i) % 128)))) << i;
  }
}

TEST_F(SafetensorsReaderTest, AFileThatShrankAfterOpenIsCorruptionAtTheRead) {
  std::vector<float> w(4096, 1.0f);
  ASSERT_TRUE(WriteSafetensors(Path("s.safetensors"), {{"w", {4096}, w.data()}}, {}).ok());
  auto r = SafetensorsReader::Open(Path("s.safetensors"));
  ASSERT_TRUE(r.ok());
  fs::resize_file(Path("s.safetensors"), fs::file_size(Path("s.safetensors")) - 1024);
  std::vector<float> got(4096);
  const Status s = r->read(r->header().entries[0], 0, 4096, got.data());
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.to_string();
  EXPECT_NE(s.message().find("s.safetensors"), std::string::npos) << s.message();
}

TEST_F(SafetensorsReaderTest, OpenRefusesWhatReadSafetensorsRefuses) {
  EXPECT_EQ(SafetensorsReader::Open(Path("missing.safetensors")).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(SafetensorsReader::Open(dir_.string()).status().code(),
            StatusCode::kInvalidArgument);
  std::ofstream(Path("junk.safetensors")) << "not a safetensors file at all";
  EXPECT_EQ(SafetensorsReader::Open(Path("junk.safetensors")).status().code(),
            StatusCode::kCorruption);
}

}  // namespace
}  // namespace strata
