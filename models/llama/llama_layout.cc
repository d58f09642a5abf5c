#include "models/llama/llama_layout.h"

#include <array>
#include <string>

#include "core/util/check.h"

namespace strata::models {

LlamaLayout MakeLlamaLayout(const LlamaConfig& c) {
  STRATA_CHECK(c.validate().ok()) << c.to_string();
  LlamaLayout layout;
  layout.config = c;
  const int64_t C = c.n_embd, KV = int64_t(c.n_kv_head) * c.head_dim(), F = c.ffn_dim,
                V = c.vocab_size;
  const InitKind normal = InitKind::kNormal, ones = InitKind::kOnes;

  BlockSpec emb;
  emb.kind = BlockKind::kEmbedding;
  emb.name = "embedding";
  AppendTensor(emb, "model.embed_tokens.weight", {V, C}, normal, kLlamaInitStd);
  SetTensorParallel(emb, TpRule::kVocab, 0);
  PackBlock(layout, std::move(emb));

  for (int l = 0; l < c.n_layer; ++l) {
    BlockSpec b;
    b.kind = BlockKind::kTransformer;
    b.layer = l;
    b.name = "layers." + std::to_string(l);
    const std::string p = "model.layers." + std::to_string(l) + ".";
    AppendTensor(b, p + "input_layernorm.weight", {C}, ones);
    // nn.Linear stores (out, in): a column-parallel cut is of dimension 0 (by heads for q, k
    // and v: T must divide n_kv_head), a row-parallel one of dimension 1.
    AppendTensor(b, p + "self_attn.q_proj.weight", {C, C}, normal, kLlamaInitStd);
    SetTensorParallel(b, TpRule::kColumn, 0, 1, c.head_dim());
    AppendTensor(b, p + "self_attn.k_proj.weight", {KV, C}, normal, kLlamaInitStd);
    SetTensorParallel(b, TpRule::kColumn, 0, 1, c.head_dim());
    AppendTensor(b, p + "self_attn.v_proj.weight", {KV, C}, normal, kLlamaInitStd);
    SetTensorParallel(b, TpRule::kColumn, 0, 1, c.head_dim());
    AppendTensor(b, p + "self_attn.o_proj.weight", {C, C}, normal, kLlamaInitStd);
    SetTensorParallel(b, TpRule::kRow, 1);
    AppendTensor(b, p + "post_attention_layernorm.weight", {C}, ones);
    // The MLP's three weights, most of the layer, are gathered in slices under --split-ops.
    AppendTensor(b, p + "mlp.gate_proj.weight", {F, C}, normal, kLlamaInitStd);
    SetTensorParallel(b, TpRule::kColumn, 0);
    b.tensors.back().split = true;
    AppendTensor(b, p + "mlp.up_proj.weight", {F, C}, normal, kLlamaInitStd);
    SetTensorParallel(b, TpRule::kColumn, 0);
    b.tensors.back().split = true;
    AppendTensor(b, p + "mlp.down_proj.weight", {C, F}, normal, kLlamaInitStd);
    SetTensorParallel(b, TpRule::kRow, 1);
    b.tensors.back().split = true;
    PackBlock(layout, std::move(b));
  }

  BlockSpec head;
  head.kind = BlockKind::kHead;
  head.name = "head";
  AppendTensor(head, "model.norm.weight", {C}, ones);
  if (!c.tie_embeddings) {
    AppendTensor(head, "lm_head.weight", {V, C}, normal, kLlamaInitStd);
    SetTensorParallel(head, TpRule::kVocab, 0);
  }
  PackBlock(layout, std::move(head));

  return layout;
}

namespace {

// The offsets of a decoder layer's tensors in its block, in LlamaLayerTensor order.
std::array<int64_t, kDownProj + 1> LayerOffsets(const BlockSpec& b) {
  STRATA_CHECK(b.kind == BlockKind::kTransformer && b.tensors.size() == kDownProj + 1) << b.name;
  std::array<int64_t, kDownProj + 1> at{};
  for (size_t t = 0; t < at.size(); ++t) at[t] = b.tensors[t].offset;
  return at;
}

}  // namespace

LlamaBlockTensors LayerTensors(const BlockSpec& b, const float* p) {
  const auto at = LayerOffsets(b);
  return {p + at[kInputNorm], p + at[kQProj],    p + at[kKProj],
          p + at[kVProj],     p + at[kOProj],    p + at[kPostNorm],
          p + at[kGateProj],  p + at[kUpProj],   p + at[kDownProj]};
}

LlamaBlockGrads LayerGrads(const BlockSpec& b, float* p) {
  const auto at = LayerOffsets(b);
  return {p + at[kInputNorm], p + at[kQProj],    p + at[kKProj],
          p + at[kVProj],     p + at[kOProj],    p + at[kPostNorm],
          p + at[kGateProj],  p + at[kUpProj],   p + at[kDownProj]};
}

}  // namespace strata::models
