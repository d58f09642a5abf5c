// Wide token files (llm.c's LLaMA 3 format: magic 20240801, version 7, uint32 tokens), for
// vocabularies above 65,536; the uint16 format stays as it was, 2 bytes a token in memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/token_dataset.h"
#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

std::string WideFileBytes(const std::vector<uint32_t>& tokens, int32_t version = 7,
                          int64_t extra_bytes = 0) {
  std::vector<int32_t> header(256, 0);
  header[0] = kWideTokenFileMagic;
  header[1] = version;
  header[2] = static_cast<int32_t>(tokens.size());
  std::string bytes(reinterpret_cast<const char*>(header.data()), header.size() * 4);
  for (uint32_t t : tokens) {
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>(t >> (8 * b)));
  }
  bytes.resize(size_t(int64_t(bytes.size()) + extra_bytes));
  return bytes;
}

std::vector<uint32_t> LlamaThreeIds(int n) {
  std::vector<uint32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = uint32_t(128255 - (i * 977) % 100000);  // most above 65535
  return v;
}

TEST(WideTokenFile, ReadsIdsAboveTheUint16RangeAndBatchesThem) {
  const auto ids = LlamaThreeIds(300);
  auto ds = TokenDataset::FromBytes(WideFileBytes(ids), "llama3.bin", 128256);
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
  EXPECT_EQ(ds->format(), TokenDataset::Format::kTokenFile);
  EXPECT_EQ(ds->token_bytes(), 4);
  ASSERT_EQ(ds->num_tokens(), 300);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(ds->token(i), ids[size_t(i)]) << i;
  // The batch windows are the uint16 format's (Note [Batch windows]), with the wide ids.
  const int B = 2, T = 16;
  std::vector<int32_t> x(B * T), y(B * T);
  ds->batch(3, B, T, x.data(), y.data());
  for (int r = 0; r < B; ++r) {
    const int64_t s = ds->window_start(3, B, T, r);
    for (int t = 0; t < T; ++t) {
      EXPECT_EQ(x[size_t(r * T + t)], int32_t(ids[size_t(s + t)]));
      EXPECT_EQ(y[size_t(r * T + t)], int32_t(ids[size_t(s + t + 1)]));
    }
  }
}

TEST(WideTokenFile, AnIdAtOrAboveTheVocabularyIsOutOfRangeWithItsNumbers) {
  auto ids = LlamaThreeIds(50);
  ids[17] = 128256;
  auto ds = TokenDataset::FromBytes(WideFileBytes(ids), "llama3.bin", 128256);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(ds.status().message().find("token 17 (byte offset 1092) is 128256"), std::string::npos)
      << ds.status().message();
  test_support::ExpectFault(ds.status(), Option::kVocab, {{"token", 128256}, {"index", 17}});
}

TEST(WideTokenFile, AnotherVersionOrSizeIsCorruptionNamingTheWideFormat) {
  auto v1 = TokenDataset::FromBytes(WideFileBytes(LlamaThreeIds(10), 1), "w.bin", 128256);
  ASSERT_FALSE(v1.ok());
  EXPECT_EQ(v1.status().code(), StatusCode::kCorruption);
  EXPECT_NE(v1.status().message().find("Strata reads version 7 (uint32 tokens"), std::string::npos)
      << v1.status().message();
  // Two bytes short of the last token: the header's count asks for 4 bytes a token.
  auto short_file =
      TokenDataset::FromBytes(WideFileBytes(LlamaThreeIds(10), 7, -2), "w.bin", 128256);
  ASSERT_FALSE(short_file.ok());
  EXPECT_NE(short_file.status().message().find("promises 10 tokens, i.e. 1064 bytes"),
            std::string::npos)
      << short_file.status().message();
}

TEST(WideTokenFile, ABinFileWithNeitherMagicNamesBoth) {
  std::string bytes = WideFileBytes(LlamaThreeIds(10));
  bytes[0] = 'x';
  auto ds = TokenDataset::FromBytes(bytes, "w.bin", 128256);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("expected 20240520 (llm.c/nanoGPT format) or 20240801"),
            std::string::npos)
      << ds.status().message();
}

TEST(WideTokenFile, InMemoryWideTokensBatchLikeTheFile) {
  const auto ids = LlamaThreeIds(40);
  const TokenDataset ds = TokenDataset::FromTokens(ids, "wide");
  EXPECT_EQ(ds.token_bytes(), 4);
  EXPECT_EQ(ds.token(5), ids[5]);
}

}  // namespace
}  // namespace strata
