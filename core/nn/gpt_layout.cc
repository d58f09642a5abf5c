#include "core/nn/gpt_layout.h"

#include <cmath>
#include <cstring>

#include "core/util/check.h"
#include "core/util/rng.h"

namespace strata {
namespace {

int64_t AlignUp(int64_t n) {
  return (n + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
}

void AddTensor(BlockSpec& b, std::string name, std::vector<int64_t> shape, InitKind init,
               float std = 0.0f) {
  TensorSpec t;
  t.name = std::move(name);
  t.numel = 1;
  for (int64_t d : shape) t.numel *= d;
  t.shape = std::move(shape);
  t.decay = t.shape.size() >= 2;
  t.init = init;
  t.init_std = std;
  t.offset = b.numel;
  b.numel = AlignUp(b.numel + t.numel);
  b.tensors.push_back(std::move(t));
}

}  // namespace

GptLayout MakeGptLayout(const GptConfig& c) {
  STRATA_CHECK(c.validate().ok()) << c.to_string();
  GptLayout layout;
  layout.config = c;
  const int64_t C = c.n_embd;
  const float std = 0.02f;
  const float proj_std = 0.02f / std::sqrt(2.0f * c.n_layer);

  BlockSpec emb;
  emb.kind = BlockKind::kEmbedding;
  emb.name = "embedding";
  AddTensor(emb, "transformer.wte.weight", {c.vocab_size, C}, InitKind::kNormal, std);
  AddTensor(emb, "transformer.wpe.weight", {c.block_size, C}, InitKind::kNormal, std);
  layout.blocks.push_back(std::move(emb));

  for (int l = 0; l < c.n_layer; ++l) {
    BlockSpec b;
    b.kind = BlockKind::kTransformer;
    b.layer = l;
    b.name = "h." + std::to_string(l);
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    AddTensor(b, p + "ln_1.weight", {C}, InitKind::kOnes);
    AddTensor(b, p + "ln_1.bias", {C}, InitKind::kZeros);
    AddTensor(b, p + "attn.c_attn.weight", {C, 3 * C}, InitKind::kNormal, std);
    AddTensor(b, p + "attn.c_attn.bias", {3 * C}, InitKind::kZeros);
    AddTensor(b, p + "attn.c_proj.weight", {C, C}, InitKind::kNormal, proj_std);
    AddTensor(b, p + "attn.c_proj.bias", {C}, InitKind::kZeros);
    AddTensor(b, p + "ln_2.weight", {C}, InitKind::kOnes);
    AddTensor(b, p + "ln_2.bias", {C}, InitKind::kZeros);
    AddTensor(b, p + "mlp.c_fc.weight", {C, 4 * C}, InitKind::kNormal, std);
    AddTensor(b, p + "mlp.c_fc.bias", {4 * C}, InitKind::kZeros);
    AddTensor(b, p + "mlp.c_proj.weight", {4 * C, C}, InitKind::kNormal, proj_std);
    AddTensor(b, p + "mlp.c_proj.bias", {C}, InitKind::kZeros);
    layout.blocks.push_back(std::move(b));
  }

  BlockSpec head;
  head.kind = BlockKind::kHead;
  head.name = "head";
  AddTensor(head, "transformer.ln_f.weight", {C}, InitKind::kOnes);
  AddTensor(head, "transformer.ln_f.bias", {C}, InitKind::kZeros);
  layout.blocks.push_back(std::move(head));

  for (const auto& b : layout.blocks) {
    layout.block_offset.push_back(layout.total_numel);
    layout.total_numel += b.numel;
  }
  return layout;
}

void InitBlockParams(const BlockSpec& block, uint64_t seed, float* params) {
  std::memset(params, 0, sizeof(float) * block.numel);
  for (const auto& t : block.tensors) {
    float* p = params + t.offset;
    switch (t.init) {
      case InitKind::kZeros:
        break;
      case InitKind::kOnes:
        for (int64_t i = 0; i < t.numel; ++i) p[i] = 1.0f;
        break;
      case InitKind::kNormal: {
        NormalRng rng(HashSeed(seed, t.name));
        for (int64_t i = 0; i < t.numel; ++i) p[i] = t.init_std * rng.next();
        break;
      }
    }
  }
}

}  // namespace strata
