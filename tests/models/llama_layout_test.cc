// The LLaMA model's description: Hugging Face's names and shapes, its parameter count, the tied
// head without lm_head, Hugging Face's initialisation, and a checkpoint written under those names
// read back by HfCheckpoint as a Hugging Face directory.
#include "models/llama/llama_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/io/hf_checkpoint.h"
#include "core/io/safetensors.h"
#include "core/nn/tp_layout.h"
#include "tests/common/scratch_dir.h"

namespace strata::models {
namespace {

int64_t Numel(const LlamaLayout& l) {
  int64_t n = 0;
  for (const BlockSpec& b : l.blocks)
    for (const TensorSpec& t : b.tensors) n += t.numel;
  return n;
}

TEST(LlamaLayout, HuggingFacesNamesAndShapes) {
  const LlamaConfig c = *LlamaPreset("tinyllama-1.1b");
  const LlamaLayout l = MakeLlamaLayout(c);
  ASSERT_EQ(l.num_blocks(), c.n_layer + 2);
  EXPECT_EQ(Numel(l), c.num_params());
  EXPECT_EQ(l.embedding().tensors[0].name, "model.embed_tokens.weight");
  const BlockSpec& b = l.layer(21);
  EXPECT_EQ(b.tensors[kKProj].name, "model.layers.21.self_attn.k_proj.weight");
  EXPECT_EQ(b.tensors[kKProj].shape, (std::vector<int64_t>{256, 2048}));  // 4 kv heads of 64
  EXPECT_EQ(b.tensors[kDownProj].shape, (std::vector<int64_t>{2048, 5632}));
  EXPECT_FALSE(b.tensors[kInputNorm].decay);
  EXPECT_TRUE(b.tensors[kGateProj].decay);
  EXPECT_EQ(l.head().tensors[kLmHead].name, "lm_head.weight");
  for (const BlockSpec& blk : l.blocks)
    for (const TensorSpec& t : blk.tensors) EXPECT_EQ(t.offset % kTensorAlignFloats, 0) << t.name;
}

TEST(LlamaLayout, ATiedHeadHasNoLmHead) {
  const LlamaConfig c = *LlamaPreset("llama3.2-1b");
  const LlamaLayout l = MakeLlamaLayout(c);
  ASSERT_EQ(l.head().tensors.size(), 1u);
  EXPECT_EQ(l.head().tensors[0].name, "model.norm.weight");
  EXPECT_EQ(Numel(l), c.num_params());
}

TEST(LlamaLayout, HuggingFacesInitialisation) {
  const LlamaLayout l = MakeLlamaLayout(*LlamaPreset("llama-small"));
  const BlockSpec& b = l.layer(0);
  std::vector<float> p(size_t(b.numel));
  InitBlockParams(b, 1234, p.data());
  const LlamaBlockTensors t = LayerTensors(b, p.data());
  for (int i = 0; i < 384; ++i) ASSERT_EQ(t.input_norm[i], 1.0f);
  double sq = 0;
  const int64_t n = b.tensors[kQProj].numel;
  for (int64_t i = 0; i < n; ++i) sq += double(t.q[i]) * t.q[i];
  EXPECT_NEAR(std::sqrt(sq / double(n)), 0.02, 0.001);
}

// Each tensor's tensor-parallel rule (Note [Tensor-parallel slices] in core/nn/tp_layout.h):
// column-parallel q, k, v, gate and up by rows of whole heads, row-parallel o and down by
// columns, vocab-parallel embedding and head (padded), replicated norms; the ranks' slices put
// back together are the whole block, and T must divide n_kv_head.
TEST(LlamaLayout, TensorParallelRulesCutWholeHeadsAndPutBackTheWholeBlock) {
  LlamaConfig c = *LlamaPreset("llama-tiny");
  c.vocab_size = 300;  // padded to 384: the last rank's rows are partly padding
  const LlamaLayout full = MakeLlamaLayout(c);
  const int64_t C = c.n_embd, KV = int64_t(c.n_kv_head) * c.head_dim(), F = c.ffn_dim;
  for (int tp : {1, 2}) {
    ASSERT_EQ(c.n_kv_head % tp, 0);
    ModelLayout local = full;
    ASSERT_EQ(TpIndivisible(local, tp), nullptr);
    SliceLayoutForTp(local, tp);
    const BlockSpec& l0 = local.blocks[1];
    EXPECT_EQ(local.embedding().tensors[0].shape, (std::vector<int64_t>{384 / tp, C}));
    EXPECT_EQ(l0.tensors[kQProj].shape, (std::vector<int64_t>{C / tp, C}));
    EXPECT_EQ(l0.tensors[kKProj].shape, (std::vector<int64_t>{KV / tp, C}));
    EXPECT_EQ(l0.tensors[kOProj].shape, (std::vector<int64_t>{C, C / tp}));
    EXPECT_EQ(l0.tensors[kGateProj].shape, (std::vector<int64_t>{F / tp, C}));
    EXPECT_EQ(l0.tensors[kDownProj].shape, (std::vector<int64_t>{C, F / tp}));
    EXPECT_EQ(l0.tensors[kInputNorm].shape, (std::vector<int64_t>{C}));
    EXPECT_TRUE(TpReplicated(l0, kPostNorm));
    EXPECT_FALSE(TpReplicated(l0, kVProj));
    for (int b = 0; b < full.num_blocks(); ++b) {
      std::vector<float> whole(size_t(full.blocks[b].numel));
      for (size_t i = 0; i < whole.size(); ++i) whole[i] = float(i % 1000) + 0.5f;
      std::vector<float> back(whole.size(), 0.0f);
      for (int r = 0; r < tp; ++r) {
        std::vector<float> mine(size_t(local.blocks[b].numel), -1.0f);
        SliceBlockParams(full.blocks[b], local.blocks[b], r, whole.data(), mine.data());
        UnsliceBlockParams(full.blocks[b], local.blocks[b], r, mine.data(), back.data());
      }
      EXPECT_EQ(whole, back) << "tp " << tp << ", block " << b;
    }
  }
  // Rank 1 of 2 holds the second half of q's heads: row C/2 of q_proj is its first row.
  ModelLayout two = full;
  SliceLayoutForTp(two, 2);
  std::vector<float> whole(size_t(full.blocks[1].numel));
  for (size_t i = 0; i < whole.size(); ++i) whole[i] = float(i);
  std::vector<float> mine(size_t(two.blocks[1].numel));
  SliceBlockParams(full.blocks[1], two.blocks[1], 1, whole.data(), mine.data());
  EXPECT_EQ(mine[size_t(two.blocks[1].tensors[kQProj].offset)],
            whole[size_t(full.blocks[1].tensors[kQProj].offset + (C / 2) * C)]);
  // o_proj's columns: rank 1's (0, 0) is the whole's (0, C/2).
  EXPECT_EQ(mine[size_t(two.blocks[1].tensors[kOProj].offset)],
            whole[size_t(full.blocks[1].tensors[kOProj].offset + C / 2)]);
  // A tp that does not divide the kv heads is named.
  LlamaConfig one_kv = c;
  one_kv.n_kv_head = 1;
  const LlamaLayout one_kv_layout = MakeLlamaLayout(one_kv);
  const TensorSpec* bad = TpIndivisible(one_kv_layout, 2);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->name, "model.layers.0.self_attn.k_proj.weight");
}

TEST(LlamaLayout, ACheckpointUnderItsNamesReadsBackAsAHuggingFaceDirectory) {
  const test_support::ScratchDir scratch("llama-layout");
  const std::filesystem::path dir = scratch.path();
  const LlamaLayout l = MakeLlamaLayout(*LlamaPreset("llama-tiny"));
  std::vector<float> params(size_t(l.total_numel));
  std::vector<TensorView> views;
  for (int i = 0; i < l.num_blocks(); ++i) {
    float* block = params.data() + l.block_offset[size_t(i)];
    InitBlockParams(l.blocks[size_t(i)], 7, block);
    for (const TensorSpec& t : l.blocks[size_t(i)].tensors) {
      views.push_back({t.name, t.shape, block + t.offset});
    }
  }
  ASSERT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), views, {}).ok());
  std::ofstream(dir / "config.json") << R"({"model_type": "llama"})";
  auto ckpt = HfCheckpoint::Open(dir.string());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  ASSERT_EQ(ckpt->names().size(), views.size());
  for (const TensorView& v : views) {
    const SafetensorsEntry* e = ckpt->find(v.name);
    ASSERT_NE(e, nullptr) << v.name;
    EXPECT_EQ(e->shape, v.shape) << v.name;
  }
  const TensorSpec& down = l.layer(1).tensors[kDownProj];
  std::vector<float> row(size_t(down.shape[1]));
  ASSERT_TRUE(ckpt->read(down.name, uint64_t(down.shape[1]) * 3, row.size(), row.data()).ok());
  const float* want = params.data() + l.block_offset[2] + down.offset + down.shape[1] * 3;
  for (size_t i = 0; i < row.size(); ++i) ASSERT_EQ(row[i], want[i]) << i;
}

}  // namespace
}  // namespace strata::models
