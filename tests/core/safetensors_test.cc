#include "core/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace strata {
namespace {

namespace fs = std::filesystem;

std::string ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file built by hand: 8-byte little-endian length, `header` verbatim, then `data`.
std::string RawFile(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_safetensors_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // Nothing but the named files in the directory (no temporary leftovers).
  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

struct Model {
  std::vector<float> wte, bias, scalar;
  Model() {
    for (int i = 0; i < 6 * 4; ++i) wte.push_back(0.25f * i - 1.5f);
    bias = {1.0f, -2.0f, 3.5f, std::numeric_limits<float>::denorm_min()};
    scalar = {42.0f};
  }
  std::vector<TensorView> Views() const {
    return {{"transformer.wte.weight", {6, 4}, wte.data()},
            {"transformer.ln_f.bias", {4}, bias.data()},
            {"step_scalar", {}, scalar.data()},
            {"empty", {0, 3}, nullptr}};
  }
};

TEST_F(SafetensorsTest, RoundTrip) {
  Model m;
  const std::map<std::string, std::string> meta = {{"n_layer", "2"}, {"vocab_size", "256"}};
  ASSERT_TRUE(WriteSafetensors(Path("w.safetensors"), m.Views(), meta).ok());
  auto f = ReadSafetensors(Path("w.safetensors"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->metadata, meta);
  ASSERT_EQ(f->tensors.size(), 4u);
  const SafetensorsTensor& wte = f->tensors.at("transformer.wte.weight");
  EXPECT_EQ(wte.shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(wte.dtype, "F32");
  EXPECT_EQ(wte.data, m.wte);
  EXPECT_EQ(f->tensors.at("transformer.ln_f.bias").data, m.bias);
  EXPECT_EQ(f->tensors.at("step_scalar").shape, std::vector<int64_t>{});
  EXPECT_EQ(f->tensors.at("step_scalar").data, m.scalar);
  EXPECT_TRUE(f->tensors.at("empty").data.empty());
  EXPECT_EQ(Listing(), std::vector<std::string>{"w.safetensors"});
}

// The in-memory parser (ParseSafetensors, which the fuzzer drives) and the file reader agree,
// and EncodeSafetensorsHeader gives the bytes that WriteSafetensors puts before the data.
TEST_F(SafetensorsTest, InMemoryParserMatchesTheReader) {
  Model m;
  const std::map<std::string, std::string> meta = {{"n_layer", "2"}};
  ASSERT_TRUE(WriteSafetensors(Path("w.safetensors"), m.Views(), meta).ok());
  const std::string bytes = ReadBytes(Path("w.safetensors"));
  auto head = EncodeSafetensorsHeader(m.Views(), meta, "w");
  ASSERT_TRUE(head.ok()) << head.status().to_string();
  EXPECT_EQ(bytes.substr(0, head->size()), *head);
  auto parsed = ParseSafetensors(bytes, "w");
  auto read = ReadSafetensors(Path("w.safetensors"));
  ASSERT_TRUE(parsed.ok() && read.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->metadata, read->metadata);
  for (const auto& [name, t] : read->tensors) {
    EXPECT_EQ(parsed->tensors.at(name).data, t.data) << name;
    EXPECT_EQ(parsed->tensors.at(name).shape, t.shape) << name;
  }
  for (size_t cut : {size_t{0}, size_t{7}, size_t{8}, head->size(), bytes.size() - 1}) {
    EXPECT_EQ(ParseSafetensors(std::string_view(bytes).substr(0, cut), "w").status().code(),
              StatusCode::kCorruption)
        << "cut at " << cut;
  }
}

// Found by fuzzing: the message for a bad shape dump()ed it, recursing once per level of
// nesting; 200k levels overflowed the stack (tests/fuzz/regressions/safetensors_header/).
TEST_F(SafetensorsTest, DeeplyNestedShapeIsCorruptionNotACrash) {
  const std::string header = R"({"a":{"dtype":"F32","shape":)" + std::string(200000, '[') +
                             std::string(200000, ']') + R"(,"data_offsets":[0,0]}})";
  auto f = ParseSafetensors(RawFile(header, ""), "deep");
  EXPECT_EQ(f.status().code(), StatusCode::kCorruption);
  EXPECT_NE(f.status().message().find("shape element 0 is not a non-negative integer"),
            std::string::npos)
      << f.status().message();
}

TEST_F(SafetensorsTest, LayoutFollowsTheFormat) {
  Model m;
  ASSERT_TRUE(WriteSafetensors(Path("w.safetensors"), m.Views(), {{"k", "v"}}).ok());
  const std::string bytes = ReadBytes(Path("w.safetensors"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  EXPECT_EQ((8 + n) % 8, 0u) << "data section must start 8-byte aligned";
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  EXPECT_NE(header.find("\"__metadata__\":{\"k\":\"v\"}"), std::string::npos) << header;
  EXPECT_NE(header.find("\"transformer.wte.weight\":{\"data_offsets\":[20,116],\"dtype\":\"F32\","
                        "\"shape\":[6,4]}"),
            std::string::npos)
      << header;
  EXPECT_EQ(bytes.size(), 8 + n + (24 + 4 + 1) * 4);
  // The wte data sits at the end, in name order after the others ("empty", "step_scalar", ...
  // sort before "transformer.*", and ln_f before wte).
  float last;
  std::memcpy(&last, bytes.data() + bytes.size() - 4, 4);
  EXPECT_EQ(last, m.wte.back());
}

TEST_F(SafetensorsTest, ReexportIsByteIdentical) {
  Model m;
  const std::map<std::string, std::string> meta = {{"b", "2"}, {"a", "1"}};
  ASSERT_TRUE(WriteSafetensors(Path("a.safetensors"), m.Views(), meta).ok());
  // Same tensors in another order: same bytes.
  auto views = m.Views();
  std::reverse(views.begin(), views.end());
  ASSERT_TRUE(WriteSafetensors(Path("b.safetensors"), views, meta).ok());
  // What was read back, exported again: same bytes.
  auto f = ReadSafetensors(Path("a.safetensors"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  std::vector<TensorView> again;
  for (const auto& [name, t] : f->tensors) again.push_back({name, t.shape, t.data.data()});
  ASSERT_TRUE(WriteSafetensors(Path("c.safetensors"), again, f->metadata).ok());
  const std::string a = ReadBytes(Path("a.safetensors"));
  EXPECT_EQ(a, ReadBytes(Path("b.safetensors")));
  EXPECT_EQ(a, ReadBytes(Path("c.safetensors")));
}

TEST_F(SafetensorsTest, OverwritesAtomically) {
  Model m;
  ASSERT_TRUE(WriteSafetensors(Path("w.safetensors"), m.Views(), {}).ok());
  const std::string before = ReadBytes(Path("w.safetensors"));
  // A failing export leaves the old file alone and no temporary behind.
  std::vector<TensorView> dup = {{"x", {1}, m.scalar.data()}, {"x", {1}, m.scalar.data()}};
  Status s = WriteSafetensors(Path("w.safetensors"), dup, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s.to_string();
  EXPECT_EQ(ReadBytes(Path("w.safetensors")), before);
  EXPECT_EQ(Listing(), std::vector<std::string>{"w.safetensors"});
  // A successful one replaces it.
  std::vector<TensorView> one = {{"y", {1}, m.scalar.data()}};
  ASSERT_TRUE(WriteSafetensors(Path("w.safetensors"), one, {}).ok());
  auto f = ReadSafetensors(Path("w.safetensors"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tensors.count("y"), 1u);
  EXPECT_EQ(Listing(), std::vector<std::string>{"w.safetensors"});
}

// SafetensorsWriter (weights never whole in memory): tensors in any order give WriteSafetensors'
// bytes; nothing appears before commit(), and a writer dropped before it leaves the old file and
// no temporary behind.
TEST_F(SafetensorsTest, WriterTakesTensorsInAnyOrderAndAppearsOnCommit) {
  Model m;
  const std::map<std::string, std::string> meta = {{"n_layer", "2"}};
  ASSERT_TRUE(WriteSafetensors(Path("whole.safetensors"), m.Views(), meta).ok());
  std::vector<TensorView> views = m.Views();
  Result<SafetensorsWriter> w = SafetensorsWriter::Create(Path("w.safetensors"), views, meta);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  std::reverse(views.begin(), views.end());
  for (const TensorView& t : views) ASSERT_TRUE(w->write(t.name, t.data).ok()) << t.name;
  EXPECT_FALSE(fs::exists(Path("w.safetensors")));
  ASSERT_TRUE(w->commit().ok());
  EXPECT_EQ(ReadBytes(Path("w.safetensors")), ReadBytes(Path("whole.safetensors")));

  const std::string before = ReadBytes(Path("w.safetensors"));
  {
    Result<SafetensorsWriter> dropped =
        SafetensorsWriter::Create(Path("w.safetensors"), {{"x", {2}, nullptr}}, {});
    ASSERT_TRUE(dropped.ok()) << dropped.status().to_string();
    const float two[2] = {1.0f, 2.0f};
    ASSERT_TRUE(dropped->write("x", two).ok());
  }
  EXPECT_EQ(ReadBytes(Path("w.safetensors")), before);
  EXPECT_EQ(Listing(), (std::vector<std::string>{"w.safetensors", "whole.safetensors"}));
}

TEST_F(SafetensorsTest, RejectsBadInput) {
  float v = 1;
  EXPECT_EQ(WriteSafetensors(Path("w"), {{"", {1}, &v}}, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteSafetensors(Path("w"), {{"__metadata__", {1}, &v}}, {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteSafetensors(Path("w"), {{"a", {-1}, &v}}, {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteSafetensors(Path("w"), {{"a", {1}, &v}}, {{"k", "\xff\xfe"}}).code(),
            StatusCode::kInvalidArgument);
  Status s =
      WriteSafetensors((dir_ / "no_such_dir" / "w.safetensors").string(), {{"a", {1}, &v}}, {});
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
  EXPECT_TRUE(Listing().empty());
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  auto f = ReadSafetensors(Path("missing.safetensors"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("missing.safetensors"), std::string::npos);
}

TEST_F(SafetensorsTest, TruncatedFileNamesTheTensor) {
  Model m;
  ASSERT_TRUE(WriteSafetensors(Path("w.safetensors"), m.Views(), {}).ok());
  std::string bytes = ReadBytes(Path("w.safetensors"));
  WriteBytes(Path("t.safetensors"), bytes.substr(0, bytes.size() - 10));
  auto f = ReadSafetensors(Path("t.safetensors"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kCorruption);
  EXPECT_NE(f.status().message().find("t.safetensors"), std::string::npos)
      << f.status().to_string();
  EXPECT_NE(f.status().message().find("transformer.wte.weight"), std::string::npos)
      << f.status().to_string();
  EXPECT_NE(f.status().message().find("truncated"), std::string::npos) << f.status().to_string();

  // Cut inside the header, and inside the length.
  WriteBytes(Path("h.safetensors"), bytes.substr(0, 20));
  EXPECT_EQ(ReadSafetensors(Path("h.safetensors")).status().code(), StatusCode::kCorruption);
  WriteBytes(Path("l.safetensors"), bytes.substr(0, 5));
  EXPECT_EQ(ReadSafetensors(Path("l.safetensors")).status().code(), StatusCode::kCorruption);
}

TEST_F(SafetensorsTest, BadHeaderIsCorruption) {
  // Not JSON.
  WriteBytes(Path("a"), RawFile("{not json", ""));
  auto a = ReadSafetensors(Path("a"));
  EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
  EXPECT_NE(a.status().message().find("JSON"), std::string::npos) << a.status().to_string();
  // JSON but not an object.
  WriteBytes(Path("b"), RawFile("[1,2]", ""));
  EXPECT_EQ(ReadSafetensors(Path("b")).status().code(), StatusCode::kCorruption);
  // A huge header length.
  std::string huge(8, '\xff');
  WriteBytes(Path("c"), huge + "{}");
  auto c = ReadSafetensors(Path("c"));
  EXPECT_EQ(c.status().code(), StatusCode::kCorruption);
  EXPECT_NE(c.status().message().find("header length"), std::string::npos)
      << c.status().to_string();
  // Missing fields, bad shape, bad offsets.
  for (const char* header : {
           R"({"t":{"shape":[1],"data_offsets":[0,4]}})",
           R"({"t":{"dtype":"F32","data_offsets":[0,4]}})",
           R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
           R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})",
           R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",
           R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})",
           R"({"t":"x"})",
           R"({"__metadata__":{"k":1}})",
       }) {
    WriteBytes(Path("d"), RawFile(header, std::string(4, '\0')));
    auto d = ReadSafetensors(Path("d"));
    EXPECT_EQ(d.status().code(), StatusCode::kCorruption)
        << header << " -> " << d.status().to_string();
  }
}

TEST_F(SafetensorsTest, SizeMismatchGapsAndOverlapsAreCorruption) {
  for (const char* header : {
           // 2x3 F32 needs 24 bytes, offsets hold 20.
           R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})",
           // Gap between tensors.
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
           // Overlap.
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           // Trailing bytes after the last tensor.
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       }) {
    WriteBytes(Path("f"), RawFile(header, std::string(24, '\0')));
    auto f = ReadSafetensors(Path("f"));
    EXPECT_EQ(f.status().code(), StatusCode::kCorruption)
        << header << " -> " << f.status().to_string();
  }
  WriteBytes(Path("g"), RawFile(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})",
                                std::string(20, '\0')));
  auto g = ReadSafetensors(Path("g"));
  EXPECT_NE(g.status().message().find("'w'"), std::string::npos) << g.status().to_string();
}

TEST_F(SafetensorsTest, UnknownAndUnsupportedDtypes) {
  WriteBytes(Path("u"), RawFile(R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})",
                                std::string(4, '\0')));
  auto u = ReadSafetensors(Path("u"));
  EXPECT_EQ(u.status().code(), StatusCode::kCorruption) << u.status().to_string();
  EXPECT_NE(u.status().message().find("Q7"), std::string::npos) << u.status().to_string();
  EXPECT_NE(u.status().message().find("'w'"), std::string::npos) << u.status().to_string();

  WriteBytes(Path("d"), RawFile(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                                std::string(8, '\0')));
  auto d = ReadSafetensors(Path("d"));
  EXPECT_EQ(d.status().code(), StatusCode::kNotSupported) << d.status().to_string();
  EXPECT_NE(d.status().message().find("F64"), std::string::npos) << d.status().to_string();
  EXPECT_NE(d.status().message().find("F32"), std::string::npos) << d.status().to_string();
}

TEST_F(SafetensorsTest, ReadsF16AndBf16) {
  // F16: 1.0 = 0x3c00, -2.0 = 0xc000, 65504 = 0x7bff, smallest subnormal 0x0001 = 2^-24, inf.
  const uint16_t f16[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x8000};
  // BF16: 1.0 = 0x3f80, -0.5 = 0xbf00, 3.140625 = 0x4049.
  const uint16_t bf16[] = {0x3f80, 0xbf00, 0x4049};
  std::string data(reinterpret_cast<const char*>(f16), sizeof f16);
  data.append(reinterpret_cast<const char*>(bf16), sizeof bf16);
  WriteBytes(Path("h"), RawFile(R"({"h":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},)"
                                R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[12,18]},)"
                                R"("__metadata__":{"format":"pt"}})",
                                data));
  auto f = ReadSafetensors(Path("h"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto& h = f->tensors.at("h");
  EXPECT_EQ(h.dtype, "F16");
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(h.data.size(), 6u);
  EXPECT_EQ(h.data[0], 1.0f);
  EXPECT_EQ(h.data[1], -2.0f);
  EXPECT_EQ(h.data[2], 65504.0f);
  EXPECT_EQ(h.data[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(h.data[4]) && h.data[4] > 0);
  EXPECT_TRUE(h.data[5] == 0.0f && std::signbit(h.data[5]));
  EXPECT_EQ(f->tensors.at("b").data, (std::vector<float>{1.0f, -0.5f, 3.140625f}));
  EXPECT_EQ(f->metadata.at("format"), "pt");
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
}

TEST(HalfConversion, AllNormalHalvesMatchTheirValue) {
  for (uint32_t e = 1; e < 31; ++e) {
    for (uint32_t m = 0; m < 1024; m += 37) {
      const uint16_t bits = static_cast<uint16_t>((e << 10) | m);
      const double want = std::ldexp(1.0 + m / 1024.0, static_cast<int>(e) - 15);
      ASSERT_EQ(HalfToFloat(bits), static_cast<float>(want)) << std::hex << bits;
      ASSERT_EQ(HalfToFloat(bits | 0x8000), -static_cast<float>(want)) << std::hex << bits;
    }
  }
}

}  // namespace
}  // namespace strata
