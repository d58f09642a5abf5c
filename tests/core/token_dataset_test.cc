#include "core/data/token_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class TokenDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_token_dataset_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteFile(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  // An llm.c token file: header {magic, version, count, 0...}, then uint16 tokens.
  static std::string TokenFileBytes(const std::vector<uint16_t>& tokens, int32_t magic = 20240520,
                                    int32_t version = 1, int32_t count = -1) {
    std::vector<int32_t> header(256, 0);
    header[0] = magic;
    header[1] = version;
    header[2] = count >= 0 ? count : static_cast<int32_t>(tokens.size());
    std::string bytes(reinterpret_cast<const char*>(header.data()), header.size() * 4);
    bytes.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * 2);
    return bytes;
  }

  fs::path dir_;
};

// A uint16 dataset's tokens, as the file holds them.
std::vector<uint16_t> Tokens16(const TokenDataset& ds) {
  std::vector<uint16_t> v(static_cast<size_t>(ds.num_tokens()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(ds.token(int64_t(i)));
  return v;
}

std::vector<uint16_t> Iota(int n, int mod) {
  std::vector<uint16_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<uint16_t>((i * 7) % mod);
  return v;
}

TEST_F(TokenDatasetTest, ReadsTokenFile) {
  const auto tokens = Iota(1000, 50257);
  const std::string path = WriteFile("train.bin", TokenFileBytes(tokens));
  auto ds = TokenDataset::Open(path, 50257);
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
  EXPECT_EQ(ds->format(), TokenDataset::Format::kTokenFile);
  EXPECT_EQ(ds->num_tokens(), 1000);
  EXPECT_EQ(Tokens16(*ds), tokens);
  EXPECT_EQ(ds->name(), path);
}

TEST_F(TokenDatasetTest, TokenFileWithoutBinSuffixIsDetectedByMagic) {
  const auto tokens = Iota(100, 300);
  auto ds = TokenDataset::Open(WriteFile("tokens.dat", TokenFileBytes(tokens)), 300);
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
  EXPECT_EQ(ds->format(), TokenDataset::Format::kTokenFile);
  EXPECT_EQ(Tokens16(*ds), tokens);
}

TEST_F(TokenDatasetTest, TruncatedTokenFileIsCorruptionWithSizes) {
  std::string bytes = TokenFileBytes(Iota(100, 256));
  bytes.resize(bytes.size() - 3);  // 1024 + 200 - 3 = 1221 bytes
  const std::string path = WriteFile("short.bin", bytes);
  auto ds = TokenDataset::Open(path, 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kCorruption) << ds.status().to_string();
  const std::string& m = ds.status().message();
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("1224"), std::string::npos) << m;  // expected bytes
  EXPECT_NE(m.find("1221"), std::string::npos) << m;  // actual bytes
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
}

TEST_F(TokenDatasetTest, TruncatedHeaderIsCorruption) {
  std::string bytes = TokenFileBytes(Iota(10, 256));
  bytes.resize(100);
  auto ds = TokenDataset::Open(WriteFile("hdr.bin", bytes), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kCorruption) << ds.status().to_string();
}

TEST_F(TokenDatasetTest, TrailingBytesAreCorruption) {
  std::string bytes = TokenFileBytes(Iota(10, 256));
  bytes += "xx";
  auto ds = TokenDataset::Open(WriteFile("long.bin", bytes), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kCorruption) << ds.status().to_string();
}

TEST_F(TokenDatasetTest, WrongVersionIsCorruption) {
  auto ds =
      TokenDataset::Open(WriteFile("v2.bin", TokenFileBytes(Iota(10, 256), 20240520, 2)), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kCorruption);
  EXPECT_NE(ds.status().message().find("version 2"), std::string::npos) << ds.status().to_string();
}

TEST_F(TokenDatasetTest, TokenAboveVocabIsOutOfRangeWithIndexAndValue) {
  auto tokens = Iota(50, 100);
  tokens[37] = 4242;
  const std::string path = WriteFile("big.bin", TokenFileBytes(tokens));
  auto ds = TokenDataset::Open(path, 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kOutOfRange) << ds.status().to_string();
  const std::string& m = ds.status().message();
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("token 37"), std::string::npos) << m;
  EXPECT_NE(m.find("4242"), std::string::npos) << m;
  EXPECT_NE(m.find("256"), std::string::npos) << m;
  EXPECT_NE(m.find("{vocab}"), std::string::npos) << m;
  test_support::ExpectFault(ds.status(), Option::kVocab,
                            {{"got", 256}, {"token", 4242}, {"index", 37}});
}

TEST_F(TokenDatasetTest, BinWithoutMagicIsBadMagic) {
  auto ds = TokenDataset::Open(WriteFile("junk.bin", std::string(4096, 'a')), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kCorruption);
  const std::string& m = ds.status().message();
  EXPECT_NE(m.find("bad magic"), std::string::npos) << m;
  EXPECT_NE(m.find("expected 20240520"), std::string::npos) << m;
}

TEST_F(TokenDatasetTest, TinyBinIsBadMagic) {
  auto ds = TokenDataset::Open(WriteFile("tiny.bin", "ab"), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kCorruption) << ds.status().to_string();
}

TEST_F(TokenDatasetTest, TextFileIsBytes) {
  const std::string text = "Hello, world!\n\xff\x01";
  auto ds = TokenDataset::Open(WriteFile("input.txt", text), 256);
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
  EXPECT_EQ(ds->format(), TokenDataset::Format::kText);
  ASSERT_EQ(ds->num_tokens(), static_cast<int64_t>(text.size()));
  EXPECT_EQ(ds->token(0), 'H');
  EXPECT_EQ(ds->token(14), 255);
  EXPECT_EQ(ds->token(15), 1);
}

TEST_F(TokenDatasetTest, TextFileWithLargerVocabIsFine) {
  auto ds = TokenDataset::Open(WriteFile("input.txt", "abcdef"), 50257);
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
}

TEST_F(TokenDatasetTest, TextFileNeedsVocab256) {
  auto ds = TokenDataset::Open(WriteFile("input.txt", "abcdef"), 100);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ds.status().message().find("256"), std::string::npos) << ds.status().to_string();
  test_support::ExpectFault(ds.status(), Option::kVocab, {{"got", 100}, {"min", 256}});
}

TEST_F(TokenDatasetTest, MissingFileIsNotFound) {
  const std::string path = (dir_ / "nope.txt").string();
  auto ds = TokenDataset::Open(path, 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kNotFound);
  EXPECT_NE(ds.status().message().find(path), std::string::npos) << ds.status().to_string();
  test_support::ExpectFault(ds.status(), Option::kData);
}

TEST_F(TokenDatasetTest, EmptyFileIsInvalidArgument) {
  auto ds = TokenDataset::Open(WriteFile("empty.txt", ""), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ds.status().message().find("empty"), std::string::npos) << ds.status().to_string();
  test_support::ExpectFault(ds.status(), Option::kData, {{"file_bytes", 0}});
}

TEST_F(TokenDatasetTest, TokenFileWithZeroTokensIsInvalidArgument) {
  auto ds = TokenDataset::Open(WriteFile("zero.bin", TokenFileBytes({})), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument) << ds.status().to_string();
}

TEST_F(TokenDatasetTest, DirectoryIsInvalidArgument) {
  auto ds = TokenDataset::Open(dir_.string(), 256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument) << ds.status().to_string();
}

TEST_F(TokenDatasetTest, BadVocabIsInvalidArgument) {
  auto ds = TokenDataset::Open(WriteFile("input.txt", "abc"), 0);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  test_support::ExpectFault(ds.status(), Option::kVocab, {{"got", 0}, {"max", kMaxDataVocab}});
}

TEST(TokenDatasetWindow, CheckWindowNeedsTPlusTwoTokens) {
  auto ds = TokenDataset::FromTokens(Iota(10, 256), "ten tokens");
  EXPECT_TRUE(ds.check_window(8).ok());
  Status s = ds.check_window(9);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ten tokens"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("10 tokens"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("{seq}"), std::string::npos) << s.to_string();
  test_support::ExpectFault(s, Option::kSeq, {{"got", 9}, {"max", 8}, {"tokens", 10}});
  test_support::ExpectFault(ds.check_window(0), Option::kSeq, {{"got", 0}});
}

TEST(TokenDatasetWindow, BatchFollowsTheDocumentedFormula) {
  const int n = 103;
  std::vector<uint16_t> tokens(n);
  for (int i = 0; i < n; ++i) tokens[i] = static_cast<uint16_t>(i);
  auto ds = TokenDataset::FromTokens(tokens, "ramp");
  const int B = 3, T = 8;
  ASSERT_TRUE(ds.check_window(T).ok());
  std::vector<int32_t> x(B * T), y(B * T);
  for (long k = 0; k < 20; ++k) {
    ds.batch(k, B, T, x.data(), y.data());
    for (int i = 0; i < B; ++i) {
      const int64_t s = ((k * B + i) * T) % (n - T - 1);
      EXPECT_EQ(ds.window_start(k, B, T, i), s);
      for (int t = 0; t < T; ++t) {
        ASSERT_EQ(x[i * T + t], s + t) << "step " << k << " row " << i;
        ASSERT_EQ(y[i * T + t], s + t + 1) << "step " << k << " row " << i;
      }
    }
  }
}

TEST(TokenDatasetWindow, FirstBatchesAreConsecutiveWindows) {
  std::vector<uint16_t> tokens(1000);
  for (int i = 0; i < 1000; ++i) tokens[i] = static_cast<uint16_t>(i % 256);
  auto ds = TokenDataset::FromTokens(tokens, "ramp");
  EXPECT_EQ(ds.window_start(0, 4, 16, 0), 0);
  EXPECT_EQ(ds.window_start(0, 4, 16, 3), 48);
  EXPECT_EQ(ds.window_start(1, 4, 16, 0), 64);
}

TEST(TokenDatasetWindow, HugeStepsUse64BitArithmetic) {
  std::vector<uint16_t> tokens(1000);
  auto ds = TokenDataset::FromTokens(tokens, "zeros");
  const long step = 3'000'000'000L;  // step * B * T overflows int32
  const int B = 64, T = 512;
  __int128 expect = (static_cast<__int128>(step) * B + 5) * T % (1000 - T - 1);
  EXPECT_EQ(ds.window_start(step, B, T, 5), static_cast<int64_t>(expect));
  std::vector<int32_t> x(B * T), y(B * T);
  ds.batch(step, B, T, x.data(), y.data());  // must stay in bounds
}

TEST(TokenDatasetWindow, FromTextIsBytes) {
  auto ds = TokenDataset::FromText("abc", "inline");
  EXPECT_EQ(ds.format(), TokenDataset::Format::kInMemory);
  ASSERT_EQ(ds.num_tokens(), 3);
  EXPECT_EQ(ds.token(0), uint32_t{'a'});
  EXPECT_EQ(ds.token(2), uint32_t{'c'});
  EXPECT_EQ(ds.token_bytes(), 2);
}

}  // namespace
}  // namespace strata
