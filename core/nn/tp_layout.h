// Tensor parallelism's layout (Megatron-LM; issue 15, docs/parallel.md "The grid"): the slice
// of every tensor that tensor-parallel rank t of T holds, as a layout of its own, so that a
// rank's pages, slots and kernels see an ordinary layout of smaller tensors. The cuts are the
// description's: each tensor's rule (TensorSpec::tp, core/nn/block_spec.h) says which dimension
// of its stored shape is cut and in how many parts, so slicing knows no model.
//
// Note [Tensor-parallel slices]
// GPT-2's rules (its Conv1D weights are (in, out)):
// - attn.c_attn is column-parallel by heads: rank t holds, of each of q, k and v, the columns of
//   heads [t*H/T, (t+1)*H/T), so its attention runs on H/T whole heads; the bias likewise;
// - attn.c_proj is row-parallel: rank t holds rows [t*C/T, (t+1)*C/T), its output is a partial
//   sum that an all-reduce over the tp group completes; its bias is replicated, added once after;
// - mlp.c_fc is column-parallel (columns [t*4C/T, ...), the bias likewise), so GELU is local;
// - mlp.c_proj is row-parallel like attn.c_proj;
// - the layernorms are replicated.
// The embedding's wte is vocab-parallel: the vocabulary is padded to a multiple of
// kTpVocabPadding (as Megatron-LM pads it) and rank t holds rows [t*Vp/T, (t+1)*Vp/T) (padding
// rows are zeros); wpe and the head's layernorm are replicated. Tensors keep their names and
// order; only shapes change. T must divide the heads and the padded vocabulary.
// LLaMA's (nn.Linear weights are (out, in), models/llama/llama_layout.cc): q, k, v, gate and up
// are column-parallel (dimension 0; T must divide n_kv_head for k and v to hold whole heads), o
// and down row-parallel (dimension 1), embed_tokens and lm_head vocab-parallel, the norms
// replicated.
#pragma once

#include <cstdint>
#include <string>

#include "core/nn/model_layout.h"

namespace strata {

inline constexpr int64_t kTpVocabPadding = 128;

// A vocabulary (a kVocab tensor's rows) padded for tensor parallelism.
int64_t TpPaddedRows(int64_t rows);

// The first tensor of `layout` whose cut `tp` does not divide (its heads or features first, then
// a padded vocabulary); nullptr when tp divides every cut.
const TensorSpec* TpIndivisible(const ModelLayout& layout, int tp);
// What a cut tensor's dimension is cut in, per part: whole units of tp_unit (heads), or rows of
// the padded vocabulary, or single features. tp must divide it.
int64_t TpCutUnits(const TensorSpec& t);

// `layout` cut for one tensor-parallel rank of `tp` (every rank's is the same) by each tensor's
// rule, laid out again; tp must divide every cut (TpIndivisible).
void SliceLayoutForTp(ModelLayout& layout, int tp);

// Whether every tensor-parallel rank holds the whole of tensor `tensor` of block `b` (its rule is
// kReplicated: the norms, the row-parallel biases, wpe): its gradient is then the same on every
// rank.
bool TpReplicated(const BlockSpec& b, int tensor);

// Copies rank `rank`'s slice of a block's whole parameters (layout `full`) into its own block
// (layout `local`, SliceLayoutForTp's), and back: Unslice writes the rank's part of every tensor
// (replicated tensors whole) and leaves the rest of `full_params` as it was.
void SliceBlockParams(const BlockSpec& full, const BlockSpec& local, int rank,
                      const float* full_params, float* local_params);
void UnsliceBlockParams(const BlockSpec& full, const BlockSpec& local, int rank,
                        const float* local_params, float* full_params);

}  // namespace strata
