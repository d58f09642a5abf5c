// GptConfig::validate: Note [Shape limits] — every dimension bounded, so that nothing sized from
// a shape overflows; the error names the flag.
#include "models/gpt2/gpt_config.h"

#include <gtest/gtest.h>

#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

GptConfig Tiny() { return *GptPreset("tiny"); }

TEST(GptConfigLimits, PresetsAreValid) {
  for (const std::string& name : GptPresetNames()) {
    EXPECT_TRUE(GptPreset(name)->validate().ok()) << name;
  }
}

TEST(GptConfigLimits, EachDimensionAboveItsLimitNamesItsFlag) {
  struct Case {
    int GptConfig::*field;
    int value;
    const char* flag;
    Option option;
  };
  for (const Case& c :
       {Case{&GptConfig::n_layer, kMaxLayers + 1, "{n_layer}", Option::kNLayer},
        Case{&GptConfig::n_layer, 100000000, "{n_layer}", Option::kNLayer},
        Case{&GptConfig::n_head, kMaxHeads + 1, "{n_head}", Option::kNHead},
        Case{&GptConfig::n_embd, kMaxEmbd + 1, "{n_embd}", Option::kNEmbd},
        Case{&GptConfig::vocab_size, kMaxVocab + 1, "{vocab}", Option::kVocab},
        Case{&GptConfig::block_size, 2147483647, "{block_size}", Option::kBlockSize},
        Case{&GptConfig::n_layer, 0, "{n_layer}", Option::kNLayer},
        Case{&GptConfig::block_size, -1, "{block_size}", Option::kBlockSize}}) {
    GptConfig g = Tiny();
    g.*c.field = c.value;
    const Status s = g.validate();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.flag << " " << c.value;
    EXPECT_NE(s.message().find(c.flag), std::string::npos) << s.message();
    // The option at fault and the value given, as facts (the message names no flag).
    test_support::ExpectFault(s, c.option, {{"got", c.value}});
    EXPECT_EQ(s.message().find("--"), std::string::npos) << s.message();
  }
}

TEST(GptConfigLimits, TheLargestShapeCountsItsParametersIn64Bits) {
  GptConfig g{kMaxLayers, kMaxHeads, kMaxEmbd, kMaxVocab, kMaxBlockSize};
  ASSERT_TRUE(g.validate().ok());
  // 12 C^2 L dominates: about 2.1e14, positive and far from overflow.
  EXPECT_GT(g.num_params(), int64_t(12) * kMaxEmbd * kMaxEmbd * kMaxLayers);
  EXPECT_LT(g.num_params(), int64_t(1) << 48);
}

}  // namespace
}  // namespace strata
