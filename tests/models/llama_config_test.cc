// LLaMA shapes: the presets are the published models' (parameter counts as Hugging Face reports
// them), Hugging Face's config.json is read as the same shape, and what Strata does not compute
// or a broken shape is refused naming the key or the option.
#include "models/llama/llama_config.h"

#include <gtest/gtest.h>

#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata::models {
namespace {

TEST(LlamaConfig, PresetsHaveThePublishedParameterCounts) {
  // sum(p.numel() for p in LlamaForCausalLM(config).parameters()) of each published config.
  const struct {
    const char* name;
    int64_t params;
  } published[] = {
      {"tinyllama-1.1b", 1100048384},
      {"llama3.2-1b", 1235814400},
      {"llama2-7b", 6738415616},
      {"llama3-8b", 8030261248},
  };
  for (const auto& p : published) {
    auto c = LlamaPreset(p.name);
    ASSERT_TRUE(c.ok()) << p.name;
    EXPECT_TRUE(c->validate().ok()) << p.name << ": " << c->validate().to_string();
    EXPECT_EQ(c->num_params(), p.params) << p.name;
  }
  for (const std::string& name : LlamaPresetNames()) {
    EXPECT_TRUE(LlamaPreset(name)->validate().ok()) << name;
  }
  auto small = LlamaPreset("llama-small");
  EXPECT_NEAR(double(small->num_params()), 10e6, 1e6);
  auto unknown = LlamaPreset("llama-giant");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("llama-tiny"), std::string::npos);
}

TEST(LlamaConfig, GroupedHeadsMustDivideAndHeadsMustBeEven) {
  LlamaConfig c = *LlamaPreset("llama-tiny");
  c.n_kv_head = 3;  // 4 query heads
  Status s = c.validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  test_support::ExpectFault(s, Option::kNKvHead, {{"n_kv_head", 3}, {"n_head", 4}});
  c.n_kv_head = 2;
  c.n_embd = 4 * 15;  // head dimension 15
  s = c.validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is odd"), std::string::npos) << s.message();
  test_support::ExpectFault(s, Option::kNHead, {{"head_dim", 15}});
}

nlohmann::json TinyLlamaJson() {
  // TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T's config.json, abridged.
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 5632, "max_position_embeddings": 2048, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32000})");
}

TEST(LlamaConfig, HuggingFacesConfigIsThePresetsShape) {
  auto c = LlamaConfigFromHf(TinyLlamaJson(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(*c, *LlamaPreset("tinyllama-1.1b"));
  // num_key_value_heads absent: one key/value head per query head.
  nlohmann::json mha = TinyLlamaJson();
  mha.erase("num_key_value_heads");
  EXPECT_EQ(LlamaConfigFromHf(mha, "config.json")->n_kv_head, 32);
}

TEST(LlamaConfig, WhatStrataDoesNotComputeIsRefusedNamingTheKey) {
  const struct {
    const char* key;
    nlohmann::json value;
  } refused[] = {
      {"rope_scaling", nlohmann::json::parse(R"({"rope_type": "llama3", "factor": 32.0})")},
      {"attention_bias", true},
      {"mlp_bias", true},
      {"hidden_act", "gelu"},
      {"model_type", "mistral"},
      {"head_dim", 128},
  };
  for (const auto& r : refused) {
    nlohmann::json j = TinyLlamaJson();
    j[r.key] = r.value;
    auto c = LlamaConfigFromHf(j, "m/config.json");
    ASSERT_FALSE(c.ok()) << r.key;
    EXPECT_EQ(c.status().code(), StatusCode::kNotSupported) << r.key;
    EXPECT_NE(c.status().message().find(r.key), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("m/config.json"), std::string::npos);
  }
  nlohmann::json missing = TinyLlamaJson();
  missing.erase("hidden_size");
  auto c = LlamaConfigFromHf(missing, "config.json");
  EXPECT_EQ(c.status().code(), StatusCode::kCorruption);
  EXPECT_NE(c.status().message().find("hidden_size"), std::string::npos);
  nlohmann::json grouped = TinyLlamaJson();
  grouped["num_key_value_heads"] = 5;
  EXPECT_EQ(LlamaConfigFromHf(grouped, "config.json").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::models
