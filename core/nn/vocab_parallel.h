// The vocab-parallel ends any model's tensor-parallel slice is built from (Megatron-LM; Note
// [Vocab-parallel cross-entropy] in tp_head.h): a table of vocabulary rows (an embedding, a head)
// cut over the tp group by its kVocab rule, a lookup through it and the cross-entropy of logits
// that no rank holds whole. Model-agnostic: the rows, the real vocabulary and the group are
// all it knows. The rank's rows are the global ids [begin, begin + rows); ids >= the real
// vocabulary are padding (zero rows, never a token or a target).
#pragma once

#include <cstdint>

#include "core/device/kernel_table.h"
#include "core/nn/tp_group.h"

namespace strata {

struct VocabSlice {
  int rows = 0;   // the rank's rows of the padded vocabulary
  int begin = 0;  // the global id of its first row
  int valid = 0;  // its first `valid` rows are real, the rest padding
  int tp = 1;     // ranks in the group
};

// Rank `tp_rank`'s slice, `rows` rows each, of the vocabulary of `vocab` real ids padded for
// tensor parallelism (TpPaddedRows).
VocabSlice VocabSliceOf(int rows, int vocab, int tp_rank);

// Floats of the per-row statistics the loss works in (the gathered maxima, the row maxima, the
// sums of exp and target logits) for B*T rows over `tp` ranks. Scratch: read only during the
// call, free again when it returns.
int64_t TpHeadStatsFloats(int B, int T, int tp);

// out (N, C) = table[tokens] over every rank's rows: the whole table's bits on every rank. One
// `all_reduce` of N·C floats.
void VocabParallelLookup(const KernelTable& k, const VocabSlice& v, const float* table,
                         const int32_t* tokens, int B, int T, int C, float* out,
                         const TpAllReduce& all_reduce);

// The mean cross-entropy of N rows of hidden states `hn` (N, C) against the rank's `table` rows
// (rows, C): the rank's logits (N, rows) and probabilities are kept for backward, `stats` is
// TpHeadStatsFloats of scratch. The same bits on every rank. Two `all_reduce`s: tp·N, 2·N.
float VocabParallelLossForward(const KernelTable& k, const VocabSlice& v, int tp_rank,
                               const float* hn, const float* table, const int32_t* targets, int N,
                               int C, float* logits, float* probs, float* stats,
                               const TpAllReduce& all_reduce);
// dlogits (N, rows) = (p - onehot) * dloss on the rank's columns (0 on padding), and dhn (N, C) =
// the gradient of hn, complete on every rank: one `all_reduce` of N·C floats. The table's
// gradient is dlogits^T @ hn over the rank's real rows, left to the caller.
void VocabParallelLossBackward(const KernelTable& k, const VocabSlice& v, const float* probs,
                               const int32_t* targets, float dloss, const float* table, int N,
                               int C, float* dlogits, float* dhn, const TpAllReduce& all_reduce);

}  // namespace strata
