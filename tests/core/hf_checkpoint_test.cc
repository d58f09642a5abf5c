// HfCheckpoint: a lone safetensors file, a model directory with model.safetensors, or sharded
// with model.safetensors.index.json, read tensor by tensor; and each way such a directory can be
// broken refused with the file at fault named.
#include "core/io/hf_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/util/option.h"
#include "tests/common/scratch_dir.h"
#include "tests/common/expect_fault.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class HfCheckpointTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return scratch_.path() + "/" + name; }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name), std::ios::binary) << text;
  }
  // A safetensors file of the named tensors, each [2, 3] holding base, base + 1, ...
  void Weights(const std::string& name, const std::vector<std::pair<std::string, float>>& ts) {
    std::vector<std::vector<float>> data;
    std::vector<TensorView> views;
    for (const auto& [t, base] : ts) {
      data.push_back({base, base + 1, base + 2, base + 3, base + 4, base + 5});
    }
    for (size_t i = 0; i < ts.size(); ++i) views.push_back({ts[i].first, {2, 3}, data[i].data()});
    ASSERT_TRUE(WriteSafetensors(Path(name), views, {}).ok());
  }
  test_support::ScratchDir scratch_{"hf-checkpoint"};
  const fs::path dir_{scratch_.path()};
};

const char* kConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 3})";

TEST_F(HfCheckpointTest, ALoneFileHasNoConfig) {
  Weights("m.safetensors", {{"a", 0}, {"b", 10}});
  auto c = HfCheckpoint::Open(Path("m.safetensors"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->config().has_value());
  EXPECT_EQ(c->names(), (std::vector<std::string>{"a", "b"}));
  float row[3];
  ASSERT_TRUE(c->read("b", 3, 3, row).ok());
  EXPECT_EQ(row[0], 13.0f);
  EXPECT_EQ(row[2], 15.0f);
}

TEST_F(HfCheckpointTest, ADirectoryWithOneWeightsFile) {
  Write("config.json", kConfig);
  Weights("model.safetensors", {{"model.norm.weight", 1}});
  auto c = HfCheckpoint::Open(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_TRUE(c->config().has_value());
  EXPECT_EQ((*c->config())["hidden_size"], 3);
  ASSERT_NE(c->find("model.norm.weight"), nullptr);
  EXPECT_EQ(c->find("model.norm.weight")->shape, (std::vector<int64_t>{2, 3}));
}

TEST_F(HfCheckpointTest, AShardedDirectoryReadsEachTensorFromItsShard) {
  Write("config.json", kConfig);
  Weights("model-00001-of-00002.safetensors", {{"a", 0}, {"b", 10}});
  Weights("model-00002-of-00002.safetensors", {{"c", 20}});
  Write("model.safetensors.index.json",
        R"({"metadata": {"total_size": 72}, "weight_map": {"a": "model-00001-of-00002.safetensors",
            "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  auto c = HfCheckpoint::Open(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(c->file_of("c"), Path("model-00002-of-00002.safetensors"));
  float v;
  ASSERT_TRUE(c->read("c", 5, 1, &v).ok());
  EXPECT_EQ(v, 25.0f);
}

TEST_F(HfCheckpointTest, AShardTheIndexListsButThatIsAbsentIsNotFoundNamingIt) {
  Write("config.json", kConfig);
  Weights("model-00001-of-00002.safetensors", {{"a", 0}});
  Write("model.safetensors.index.json",
        R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                           "z": "model-00002-of-00002.safetensors"}})");
  auto c = HfCheckpoint::Open(dir_.string());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("model-00002-of-00002.safetensors"), std::string::npos)
      << c.status().message();
  test_support::ExpectFault(c.status(), Option::kInit);
}

TEST_F(HfCheckpointTest, AnIndexThatMisplacesATensorIsCorruption) {
  Write("config.json", kConfig);
  Weights("s1.safetensors", {{"a", 0}});
  Weights("s2.safetensors", {{"b", 0}});
  Write("model.safetensors.index.json",
        R"({"weight_map": {"a": "s2.safetensors", "b": "s1.safetensors"}})");
  auto c = HfCheckpoint::Open(dir_.string());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCorruption);
  EXPECT_NE(c.status().message().find("does not hold it"), std::string::npos)
      << c.status().message();
}

TEST_F(HfCheckpointTest, ATensorInTwoShardsIsCorruption) {
  Write("config.json", kConfig);
  Weights("s1.safetensors", {{"a", 0}});
  Weights("s2.safetensors", {{"a", 1}});
  Write("model.safetensors.index.json",
        R"({"weight_map": {"a": "s1.safetensors", "x": "s2.safetensors"}})");
  auto c = HfCheckpoint::Open(dir_.string());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("is in both"), std::string::npos) << c.status().message();
}

TEST_F(HfCheckpointTest, BrokenDirectoriesNameWhatIsMissing) {
  auto none = HfCheckpoint::Open(Path("nothing-here"));
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  auto no_config = HfCheckpoint::Open(dir_.string());
  EXPECT_EQ(no_config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_config.status().message().find("config.json"), std::string::npos);
  Write("config.json", kConfig);
  auto no_weights = HfCheckpoint::Open(dir_.string());
  EXPECT_EQ(no_weights.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_weights.status().message().find("model.safetensors.index.json"), std::string::npos);
  Write("config.json", "[1, 2]");
  Weights("model.safetensors", {{"a", 0}});
  auto bad_config = HfCheckpoint::Open(dir_.string());
  EXPECT_EQ(bad_config.status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace strata
