#include "models/gpt2/gpt_layout.h"

#include <cmath>

#include "core/nn/tp_layout.h"
#include "core/util/check.h"

namespace strata {

GptLayout MakeGptLayout(const GptConfig& c) {
  STRATA_CHECK(c.validate().ok()) << c.to_string();
  GptLayout layout;
  layout.config = c;
  const int64_t C = c.n_embd;
  const float std = 0.02f;
  const float proj_std = 0.02f / std::sqrt(2.0f * c.n_layer);
  const int64_t head_width = C / c.n_head;  // tp cuts whole heads

  BlockSpec emb;
  emb.kind = BlockKind::kEmbedding;
  emb.name = "embedding";
  AppendTensor(emb, "transformer.wte.weight", {c.vocab_size, C}, InitKind::kNormal, std);
  SetTensorParallel(emb, TpRule::kVocab, 0);
  AppendTensor(emb, "transformer.wpe.weight", {c.block_size, C}, InitKind::kNormal, std);
  PackBlock(layout, std::move(emb));

  for (int l = 0; l < c.n_layer; ++l) {
    BlockSpec b;
    b.kind = BlockKind::kTransformer;
    b.layer = l;
    b.name = "h." + std::to_string(l);
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    AppendTensor(b, p + "ln_1.weight", {C}, InitKind::kOnes);
    AppendTensor(b, p + "ln_1.bias", {C}, InitKind::kZeros);
    AppendTensor(b, p + "attn.c_attn.weight", {C, 3 * C}, InitKind::kNormal, std);
    SetTensorParallel(b, TpRule::kColumn, 1, 3, head_width);  // q, k and v, each by heads
    AppendTensor(b, p + "attn.c_attn.bias", {3 * C}, InitKind::kZeros);
    SetTensorParallel(b, TpRule::kColumn, 0, 3, head_width);
    AppendTensor(b, p + "attn.c_proj.weight", {C, C}, InitKind::kNormal, proj_std);
    SetTensorParallel(b, TpRule::kRow, 0);
    AppendTensor(b, p + "attn.c_proj.bias", {C}, InitKind::kZeros);
    AppendTensor(b, p + "ln_2.weight", {C}, InitKind::kOnes);
    AppendTensor(b, p + "ln_2.bias", {C}, InitKind::kZeros);
    AppendTensor(b, p + "mlp.c_fc.weight", {C, 4 * C}, InitKind::kNormal, std);
    SetTensorParallel(b, TpRule::kColumn, 1);
    b.tensors.back().split = true;  // the MLP's weights: most of the block (split_plan.h)
    AppendTensor(b, p + "mlp.c_fc.bias", {4 * C}, InitKind::kZeros);
    SetTensorParallel(b, TpRule::kColumn, 0);
    AppendTensor(b, p + "mlp.c_proj.weight", {4 * C, C}, InitKind::kNormal, proj_std);
    SetTensorParallel(b, TpRule::kRow, 0);
    b.tensors.back().split = true;
    AppendTensor(b, p + "mlp.c_proj.bias", {C}, InitKind::kZeros);
    PackBlock(layout, std::move(b));
  }

  BlockSpec head;
  head.kind = BlockKind::kHead;
  head.name = "head";
  AppendTensor(head, "transformer.ln_f.weight", {C}, InitKind::kOnes);
  AppendTensor(head, "transformer.ln_f.bias", {C}, InitKind::kZeros);
  PackBlock(layout, std::move(head));

  return layout;
}

int64_t TpPaddedVocab(const GptConfig& c) { return TpPaddedRows(c.vocab_size); }

GptLayout MakeTpLayout(const GptConfig& c, int tp) {
  STRATA_CHECK(tp >= 1 && c.n_head % tp == 0 && TpPaddedVocab(c) % tp == 0);
  GptLayout layout = MakeGptLayout(c);
  SliceLayoutForTp(layout, tp);
  return layout;
}

}  // namespace strata
