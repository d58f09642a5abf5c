#pragma once
#include <cstdint>
// Vocab-parallel embedding and softmax cross-entropy (Megatron-LM): what one tensor-parallel rank
// computes on its slice of the vocabulary between the tp group's sum all-reduces (Note
// [Vocab-parallel cross-entropy] in models/gpt2/tp_head.h). The slice holds the whole vocabulary's
// ids [vocab_begin, vocab_begin + V); its first `valid` columns (0 <= valid <= V) are real, the
// rest padding past the real vocabulary (never a token or a target, masked everywhere).
namespace strata::kernels {

// out (B, T, C): row r is wte_rows[tokens[r] - vocab_begin] when vocab_begin <= tokens[r] <
// vocab_end, else -0.0f, the exact additive identity (x + -0 = x for every x, signed zeros
// included): summed over the ranks in any order, each row is then its owner's wte row, bit for bit.
void vocab_parallel_embedding_forward(float* out, const int32_t* tokens, const float* wte_rows,
                                      int B, int T, int C, int vocab_begin, int vocab_end);

// row_max (N): the maximum of each row of logits (N, V) over its first `valid` columns; -inf when
// valid is 0. Columns past `valid` are not read.
void vocab_parallel_logit_max(float* row_max, const float* logits, int N, int V, int valid);

// From every rank's row maxima, rank_max (tp, N) (rank s's at rank_max + s * N):
// - row_max (N) = their maximum, taken in rank order;
// - probs (N, V) = exp(logits - row_max) on the first `valid` columns, 0 on the padding;
// - sums (2N): sums[r] = the sum of probs' row r; sums[N + r] = logits[r, targets[r] -
//   vocab_begin] when the target lies in the slice's valid columns, else -0.0f (so that the sum
//   over the ranks is the owner's logit exactly).
// Columns of logits past `valid` are not read.
void vocab_parallel_softmax_partial(float* probs, float* row_max, float* sums,
                                    const float* rank_max, int tp, const float* logits,
                                    const int32_t* targets, int N, int V, int valid,
                                    int vocab_begin);

// After `sums` is summed over the ranks (the whole row's sum of exp, then the target's logit):
// probs (N, V) /= the row's sum (the slice of the whole softmax); returns the mean over the N rows
// of row_max + log(sum) - target_logit, summed in double in row order.
float vocab_parallel_crossentropy_forward(float* probs, const float* row_max, const float* sums,
                                          int N, int V);

// dlogits (N, V) += (probs - onehot(targets[r] - vocab_begin)) * dloss: the one-hot only where
// the target lies in [vocab_begin, vocab_begin + V). Padding columns (probs 0) get 0.
void vocab_parallel_crossentropy_backward(float* dlogits, const float* probs,
                                          const int32_t* targets, float dloss, int N, int V,
                                          int vocab_begin);

}  // namespace strata::kernels
