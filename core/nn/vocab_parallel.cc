#include "core/nn/vocab_parallel.h"

#include <algorithm>

#include "core/nn/gradient_contribution.h"
#include "core/nn/tp_layout.h"
#include "core/util/check.h"

namespace strata {
namespace {

using nn_internal::Align;
using nn_internal::Zero;

// The parts of the stats buffer (Note [Vocab-parallel cross-entropy] in tp_head.h).
struct HeadStats {
  float* rank_max;  // (tp, N): rank s's row maxima in slot s, gathered by a sum
  float* row_max;   // (N): the rows' maxima over every rank
  float* sums;      // (2, N): the sums of exp, then the targets' logits, summed over the ranks
};

HeadStats CarveStats(int N, int tp, float* base) {
  HeadStats s;
  s.rank_max = base;
  s.row_max = s.rank_max + Align(int64_t(tp) * N);
  s.sums = s.row_max + Align(N);
  return s;
}

}  // namespace

VocabSlice VocabSliceOf(int rows, int vocab, int tp_rank) {
  const int tp = int(TpPaddedRows(vocab) / rows);
  STRATA_CHECK(tp >= 1 && tp_rank >= 0 && tp_rank < tp) << "tp rank " << tp_rank << " of " << tp;
  const int begin = tp_rank * rows;
  return {.rows = rows, .begin = begin, .valid = std::clamp(vocab - begin, 0, rows), .tp = tp};
}

int64_t TpHeadStatsFloats(int B, int T, int tp) {
  const int64_t N = int64_t(B) * T;
  return Align(tp * N) + Align(N) + Align(2 * N);
}

void VocabParallelLookup(const KernelTable& k, const VocabSlice& v, const float* table,
                         const int32_t* tokens, int B, int T, int C, float* out,
                         const TpAllReduce& all_reduce) {
  // -0.0f for the tokens of other ranks' rows: the exact additive identity of the sum.
  k.vocab_parallel_embedding_forward(out, tokens, table, B, T, C, v.begin, v.begin + v.rows);
  all_reduce(out, int64_t(B) * T * C);
}

float VocabParallelLossForward(const KernelTable& k, const VocabSlice& v, int tp_rank,
                               const float* hn, const float* table, const int32_t* targets, int N,
                               int C, float* logits, float* probs, float* stats,
                               const TpAllReduce& all_reduce) {
  const HeadStats st = CarveStats(N, v.tp, stats);
  // The rank's logits (N, rows) = hn @ table^T, real columns only (padding never read).
  k.sgemm(false, true, N, v.valid, C, 1.0f, hn, C, table, C, 0.0f, logits, v.rows);
  Zero(k, st.rank_max, int64_t(v.tp) * N);
  k.vocab_parallel_logit_max(st.rank_max + int64_t(tp_rank) * N, logits, N, v.rows, v.valid);
  all_reduce(st.rank_max, int64_t(v.tp) * N);
  k.vocab_parallel_softmax_partial(probs, st.row_max, st.sums, st.rank_max, v.tp, logits, targets,
                                   N, v.rows, v.valid, v.begin);
  all_reduce(st.sums, 2 * int64_t(N));
  return k.vocab_parallel_crossentropy_forward(probs, st.row_max, st.sums, N, v.rows);
}

void VocabParallelLossBackward(const KernelTable& k, const VocabSlice& v, const float* probs,
                               const int32_t* targets, float dloss, const float* table, int N,
                               int C, float* dlogits, float* dhn, const TpAllReduce& all_reduce) {
  Zero(k, dlogits, int64_t(N) * v.rows);
  k.vocab_parallel_crossentropy_backward(dlogits, probs, targets, dloss, N, v.rows, v.begin);
  // dhn (N, C) = dlogits (N, rows) @ table (rows, C) over the real rows: a partial sum.
  k.sgemm(false, false, N, C, v.valid, 1.0f, dlogits, v.rows, table, C, 0.0f, dhn, C);
  all_reduce(dhn, int64_t(N) * C);
}

}  // namespace strata
