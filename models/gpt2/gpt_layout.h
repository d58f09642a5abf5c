// The GPT's model state as a sequence of blocks, each a list of named tensors laid out in one
// contiguous float range. A block is the unit the scheduler reasons about: it owns its
// parameters (and, in the same layout, their gradients and AdamW moments).
//
// Blocks, in forward order:
//   0            embedding: transformer.wte.weight (V, C), transformer.wpe.weight (block_size, C)
//   1 .. L       transformer block l-1: ln_1, attn.c_attn (C, 3C), attn.c_proj (C, C), ln_2,
//                mlp.c_fc (C, 4C), mlp.c_proj (4C, C) — Hugging Face GPT-2 names and Conv1D
//                layout (weight is (in, out); y = x @ W + b)
//   L + 1        head: transformer.ln_f; the logits use wte (tied), which lives in block 0.
// Every tensor starts at a multiple of kTensorAlignFloats inside its block, so that kernels
// get aligned pointers and a block's byte size is a multiple of 64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/model_layout.h"
#include "models/gpt2/gpt_config.h"

namespace strata {

// Tensor order inside each block kind (index into BlockSpec::tensors).
enum EmbeddingTensor { kWte = 0, kWpe };
enum TransformerTensor {
  kLn1W = 0,
  kLn1B,
  kQkvW,
  kQkvB,
  kAttProjW,
  kAttProjB,
  kLn2W,
  kLn2B,
  kFcW,
  kFcB,
  kFcProjW,
  kFcProjB,
};
enum HeadTensor { kLnfW = 0, kLnfB };

// The blocks (ModelLayout) and the shape they were made from.
struct GptLayout : ModelLayout {
  GptConfig config;

  const BlockSpec& transformer(int layer) const { return blocks[1 + layer]; }
};

// Pure function of the config; the config must be valid. Initialisation: InitBlockParams
// (block_spec.h) with GPT-2's: weights normal(0, 0.02), residual projections (attn.c_proj,
// mlp.c_proj) normal(0, 0.02/sqrt(2L)), biases 0, LayerNorm weights 1.
GptLayout MakeGptLayout(const GptConfig& config);

// The vocabulary padded for tensor parallelism (TpPaddedRows), and the layout of one
// tensor-parallel rank of `tp` (every rank's is the same; core/nn/tp_layout.h's cut). tp must
// divide the heads and the padded vocabulary (the trainer refuses other grids first).
int64_t TpPaddedVocab(const GptConfig& c);
GptLayout MakeTpLayout(const GptConfig& c, int tp);

}  // namespace strata
