// Tensor parallelism's layout (Megatron-LM; issue 15, docs/parallel.md "The grid"): the slice
// of every tensor that tensor-parallel rank t of T holds, as a GptLayout of its own, so that a
// rank's pages, slots and kernels see an ordinary layout of smaller tensors.
//
// Note [Tensor-parallel slices]
// In a transformer block (HF Conv1D weights, (in, out)):
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
#pragma once

#include <cstdint>

#include "core/nn/gpt_layout.h"

namespace strata {

inline constexpr int64_t kTpVocabPadding = 128;

// The vocabulary padded for tensor parallelism.
int64_t TpPaddedVocab(const GptConfig& c);

// The layout of one tensor-parallel rank of `tp` (every rank's is the same). tp must divide the
// heads and the padded vocabulary (the trainer refuses other grids first).
GptLayout MakeTpLayout(const GptConfig& c, int tp);

// Whether every tensor-parallel rank holds the whole of tensor `tensor` of block `b` (the
// layernorms, the row-parallel biases, wpe): its gradient is then the same on every rank.
bool TpReplicated(const BlockSpec& b, int tensor);

// Copies rank `rank`'s slice of a block's whole parameters (layout `full`) into its own block
// (layout `local`, MakeTpLayout's), and back: Unslice writes the rank's part of every tensor
// (replicated tensors whole) and leaves the rest of `full_params` as it was.
void SliceBlockParams(const BlockSpec& full, const BlockSpec& local, int rank,
                      const float* full_params, float* local_params);
void UnsliceBlockParams(const BlockSpec& full, const BlockSpec& local, int rank,
                        const float* local_params, float* full_params);

}  // namespace strata
