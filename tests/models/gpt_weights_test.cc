// models/gpt2/gpt_weights.h: a file the model cannot take is refused at fault of the option that
// named it (--init, --export) or of the one to change (--model), with the numbers it states.
#include "models/gpt2/gpt_weights.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/util/option.h"
#include "models/gpt2/gpt_layout.h"
#include "tests/common/expect_fault.h"
#include "tests/common/scratch_dir.h"

namespace strata {
namespace {

GptConfig Tiny(int n_layer = 2) {
  GptConfig c = GptPreset("tiny").value();
  c.n_layer = n_layer;
  return c;
}

TEST(GptWeights, AFileThatCannotBeReadIsAtFaultOfInit) {
  test_support::ScratchDir dir;
  const std::string missing = dir.path() + "/missing.safetensors";
  Result<GptConfig> c = ReadGptConfigFromSafetensors(missing);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("{init}", 0), 0u) << c.status().message();
  test_support::ExpectFault(c.status(), Option::kInit);
  const GptLayout layout = MakeGptLayout(Tiny());
  std::vector<float> values(layout.total_numel);
  test_support::ExpectFault(ImportGptSafetensors(missing, layout, values.data()), Option::kInit);
}

TEST(GptWeights, AnExportThatCannotBeWrittenIsAtFaultOfExport) {
  test_support::ScratchDir dir;
  const GptLayout layout = MakeGptLayout(Tiny());
  std::vector<float> values(layout.total_numel, 0.5f);
  const Status s =
      ExportGptSafetensors(dir.path() + "/no/such/dir/w.safetensors", layout, values.data());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("{export}"), std::string::npos) << s.message();
  test_support::ExpectFault(s, Option::kExport);
}

// A file of another shape: the file is what was asked for, the model's shape is what to change.
TEST(GptWeights, AnotherShapesTensorIsAtFaultOfTheModelWithItsValues) {
  test_support::ScratchDir dir;
  const std::string path = dir.path() + "/w.safetensors";
  GptConfig wide = Tiny();
  wide.n_embd = 64;
  const GptLayout written = MakeGptLayout(wide);
  std::vector<float> values(written.total_numel, 0.25f);
  ASSERT_TRUE(ExportGptSafetensors(path, written, values.data()).ok());
  const GptLayout layout = MakeGptLayout(Tiny());
  std::vector<float> into(layout.total_numel);
  const Status s = ImportGptSafetensors(path, layout, into.data());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("drop {model} and the shape flags"), std::string::npos) << s.message();
  if (!test_support::ExpectFault(s, Option::kModel)) return;
  const OptionFault& f = *DetailOf<OptionFault>(s);
  ASSERT_TRUE(f.number("values").has_value());
  ASSERT_TRUE(f.number("need_values").has_value());
  EXPECT_GT(*f.number("values"), *f.number("need_values"))
      << "a tensor of width 64 where the model has 32";
}

}  // namespace
}  // namespace strata
