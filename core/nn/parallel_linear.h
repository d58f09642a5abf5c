// Linear layers as the description's tensor-parallel rules run them (Megatron-LM's
// ColumnParallelLinear and RowParallelLinear): a model's block calls these for its weights
// stored (out, in) as nn.Linear stores them, and the all-reduces its slice needs happen here, at
// the points the weight's rule (TensorSpec::tp) implies. No model writes an all-reduce.
//
// Note [Rules imply the all-reduces]
// On a tensor-parallel rank (OpShape::tp), a block's tensors are its slice (SliceLayoutForTp):
// - a row-parallel weight (kRow) reads the rank's part of its input features, so its output is a
//   partial sum over the group: LinearForward completes it;
// - a column-parallel weight (kColumn) writes the rank's part of the output features from the
//   whole input, so the gradient of that input is a partial sum: LinearsBackward completes it,
//   once for every column-parallel weight that reads the same input (q, k and v; gate and up);
// - a row-parallel weight's replicated bias is added by tp rank 0 alone, so the sum holds it once;
// - everything else a rank computes is its own part (the column-parallel outputs, attention over
//   its heads, both kinds of weight gradient) or the same on every rank (the replicated norms and
//   row-parallel biases, from complete inputs), so replicas stay equal.
// The sums change the order of some additions: a tp block equals the whole block up to float
// rounding, and gives the same bits run to run.
// Without a group (or a group of one) these are plain GEMMs in the order a whole block runs them:
// the same bits as a block that never heard of tensor parallelism.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "core/device/kernel_table.h"
#include "core/nn/block_spec.h"
#include "core/nn/split_weights.h"
#include "core/nn/tp_group.h"

namespace strata {

// What the rules imply after a linear's GEMMs, for a family whose linears are kernels of its own
// (GPT-2's chunked Conv1D linears with a bias, models/gpt2/gpt_blocks.cc); LinearForward and
// LinearsBackward below do the same. Each does nothing without a group, or for another rule.
// A row-parallel weight's output, a partial sum, completed over the group.
void CompleteRowParallelOutput(const TpGroup* tp, const TensorSpec& w, float* y, int64_t count);
// The input gradient of column-parallel weights, a partial sum, completed over the group.
void CompleteColumnParallelInputGrad(const TpGroup* tp, const TensorSpec& w, float* dx,
                                     int64_t count);
// A row-parallel weight's replicated bias: added by tp rank 0 alone, so that the sum holds it
// once (nullptr on the other ranks).
const float* RowParallelBias(const TpGroup* tp, const TensorSpec& w, const float* bias);

// Note [Linears in row chunks]
// A weight the description marks `split` (TensorSpec::split) may come slice by slice under
// --split-ops (core/nn/split_weights.h), and a split run must give the unsplit run's bits. So such
// a weight always runs through the kernel table's nn_linear_*_rows entries, whole as the range
// [0, out) or slice by slice in order, whose ranges on chunk boundaries give the whole's bits
// (Note [nn.Linear in row chunks] in core/kernels/nn_linear.h). Other weights are one GEMM per
// product.

// Weight `tensor` of a block as the op has it: whole at w.tensor[tensor], or (nullptr there) slice
// by slice from w.slice.
struct WeightRows {
  const TensorSpec& spec;
  const SplitWeights& w;
  int tensor;
};

// y (rows, ldy), columns [0, out) = x (rows, in) @ W^T, for W of `spec` (out, in), this rank's
// slice. Row-parallel: y is summed over the group (ldy must be `out`).
void LinearForward(const KernelTable& k, const TpGroup* tp, const WeightRows& weight,
                   const float* x, int64_t rows, float* y, int64_t ldy);

// One weight of a group that reads the same input: its gradient `dw` (+=, the whole tensor) from
// the gradient of its output `dy` (rows, ldy).
struct LinearGrad {
  WeightRows weight;
  float* dw;
  const float* dy;
  int64_t ldy;
};

// dx (rows, in) = sum over the parts of dy @ W (overwritten), and each part's dW += dy^T @ x.
// Column-parallel parts: dx is summed over the group once, after all of them (the parts must
// share one rule).
void LinearsBackward(const KernelTable& k, const TpGroup* tp, const float* x, int64_t rows,
                     std::initializer_list<LinearGrad> parts, float* dx);

}  // namespace strata
