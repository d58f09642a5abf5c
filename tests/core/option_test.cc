// core/util/option.h: the floors below the edges name options by their mentions, and carry the
// option at fault with its numbers; an edge words each mention (Note [Options in messages]).
#include "core/util/option.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/util/log_words.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

std::string Shout(Option option) { return "<" + std::string(OptionKey(option)) + ">"; }

TEST(Option, EveryKeyNamesItsOptionBackAndIsAMention) {
  for (int i = 0; i <= static_cast<int>(Option::kWeightDecay); ++i) {
    const Option option = static_cast<Option>(i);
    const std::string_view key = OptionKey(option);
    ASSERT_FALSE(key.empty());
    EXPECT_EQ(OptionOfKey(key), option) << key;
    EXPECT_EQ(Mention(option), "{" + std::string(key) + "}");
    EXPECT_EQ(Mention(option).find("--"), std::string::npos);
    EXPECT_EQ(WordMentions(Mention(option), Shout), "<" + std::string(key) + ">");
  }
  EXPECT_EQ(OptionOfKey("no_such_option"), std::nullopt);
}

TEST(Option, OnlyKnownMentionsAreWordedTheRestIsKept) {
  const std::string message = Mention(Option::kNvmeDir) + " /tmp/{x}/{nvme_dir: {\"a\": 1} {" +
                              " and " + Mention(Option::kNvmeMem) + "{}{" +
                              Mention(Option::kTp) + "{";
  EXPECT_EQ(WordMentions(message, Shout),
            "<nvme_dir> /tmp/{x}/{nvme_dir: {\"a\": 1} { and <nvme_mem>{}{<tp>{");
  EXPECT_EQ(WordMentions("", Shout), "");
  EXPECT_EQ(WordMentions("no mention here", Shout), "no mention here");
}

TEST(Option, TheFaultTravelsWithContext) {
  const Status s = AtFault(Option::kPp, Status::InvalidArgument(Mention(Option::kPp) + " 0"),
                           {{"got", 0}, {"blocks", 12}});
  for (const Status& t : {s, s.with_context("grid")}) {
    const OptionFault* fault = DetailOf<OptionFault>(t);
    ASSERT_NE(fault, nullptr) << t.to_string();
    EXPECT_EQ(fault->option, Option::kPp);
    EXPECT_EQ(fault->number("got"), 0);
    EXPECT_EQ(fault->number("blocks"), 12);
    EXPECT_EQ(fault->number("none"), std::nullopt);
    EXPECT_EQ(t.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(DetailOf<OptionFault>(Status::InvalidArgument("plain")), nullptr);
}

// Issue 32, item 2: one shape for every "too few bytes" refusal, whatever its code and text.
TEST(Option, ShortOfBytesCarriesGotAndNeedAsIs) {
  const Status s = ShortOfBytes(Option::kHostMem, Status::ResourceExhausted("{host_mem} 1K"), 1024,
                                uint64_t{1} << 40);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "{host_mem} 1K");
  test_support::ExpectFault(s, Option::kHostMem,
                            {{"got", 1024}, {"need_bytes", int64_t{1} << 40}});
  // A size past int64_t reads as its largest value (FaultNumber); an errno's code is kept.
  const Status mapped = ShortOfBytes(Option::kGpuMem, Status::FromErrno(ENOMEM, "mmap"), 0,
                                     UINT64_MAX);
  EXPECT_EQ(mapped.code(), StatusCode::kResourceExhausted) << mapped.to_string();
  test_support::ExpectFault(mapped, Option::kGpuMem, {{"got", 0}, {"need_bytes", INT64_MAX}});
  EXPECT_TRUE(ShortOfBytes(Option::kGpuMem, Status::Ok(), 0, 1).ok());
}

// The shared check itself (tests/common/expect_fault.h): each way a status can miss the fault
// is a failure that says what the status carried.
TEST(ExpectFault, FailsOnEveryMissingFact) {
  const Status s = AtFault(Option::kSeq, Status::InvalidArgument("{seq} 9"), {{"got", 9}});
  EXPECT_TRUE(test_support::ExpectFault(s, Option::kSeq, {{"got", 9}}));
  EXPECT_NONFATAL_FAILURE(test_support::ExpectFault(Status::Ok(), Option::kSeq), "is OK");
  EXPECT_NONFATAL_FAILURE(test_support::ExpectFault(Status::InvalidArgument("x"), Option::kSeq),
                          "no OptionFault on InvalidArgument: x");
  EXPECT_NONFATAL_FAILURE(test_support::ExpectFault(s, Option::kBatch),
                          "another option: the fault of {seq} with {got=9}");
  EXPECT_NONFATAL_FAILURE(test_support::ExpectFault(s, Option::kSeq, {{"max", 8}}),
                          "no number 'max' in the fault of {seq}");
  EXPECT_NONFATAL_FAILURE(test_support::ExpectFault(s, Option::kSeq, {{"got", 8}}),
                          "'got' is 9, not 8");
}

// Log lines reach stderr without passing an edge: they take the process's words, which the
// CLI's main() sets to flags; unset, each option reads as its key.
TEST(Option, LogLinesTakeTheProcesssWords) {
  EXPECT_EQ(InLogTerms(Mention(Option::kTp) + " 0"), "tp 0");
  SetLogOptionWords(Shout);
  EXPECT_EQ(InLogTerms(Mention(Option::kTp) + " 0"), "<tp> 0");
  SetLogOptionWords(nullptr);
  EXPECT_EQ(InLogTerms(Mention(Option::kNvmeDir)), "nvme_dir");
}

}  // namespace
}  // namespace strata
