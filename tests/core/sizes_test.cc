#include "core/util/sizes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace strata {
namespace {

uint64_t Parse(const std::string& text) {
  Result<uint64_t> r = ParseBytes(text, "--gpu-mem");
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : 0;
}

TEST(ParseBytes, UnitsAreBinaryAndCaseInsensitive) {
  EXPECT_EQ(Parse("4096"), 4096u);
  EXPECT_EQ(Parse("7B"), 7u);
  EXPECT_EQ(Parse("512K"), 512 * kKiB);
  EXPECT_EQ(Parse("16MiB"), 16 * kMiB);
  EXPECT_EQ(Parse("2gb"), 2 * kGiB);
  EXPECT_EQ(Parse("1T"), 1024 * kGiB);
  EXPECT_EQ(Parse("1.5G"), 3 * kGiB / 2);
  EXPECT_EQ(Parse("0.5k"), 512u);
  EXPECT_EQ(Parse("0"), 0u);
}

// Found by the size_parser fuzzer's oracle (128-bit arithmetic): a double held the value, so
// sizes above 2^53 were rounded and those above 2^63 wrapped (llround overflow).
TEST(ParseBytes, WholeNumbersAreExactUpTo64Bits) {
  EXPECT_EQ(Parse("9007199254740993"), 9007199254740993ull);
  EXPECT_EQ(Parse("10000000000000000000"), 10000000000000000000ull);
  EXPECT_EQ(Parse("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(Parse("17179869183G"), 17179869183ull * kGiB);
}

TEST(ParseBytes, RefusesWhatIsNotASize) {
  for (const char* text : {"", "12X", "-1", "1.5", "1..5K", ".", "K", "1 M", "0x10"}) {
    Result<uint64_t> r = ParseBytes(text, "--gpu-mem");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--gpu-mem: '"), std::string::npos);
  }
}

TEST(ParseBytes, RefusesSizesOver64Bits) {
  for (const char* text :
       {"18446744073709551616", "17179869184G", "16777216T", "99999999999999999999999.5K"}) {
    Result<uint64_t> r = ParseBytes(text, "--host-mem");
    EXPECT_FALSE(r.ok()) << text;
  }
  Result<uint64_t> r = ParseBytes("17179869184G", "--host-mem");
  EXPECT_NE(r.status().message().find("more than 2^64 - 1 bytes"), std::string::npos);
}

}  // namespace
}  // namespace strata
