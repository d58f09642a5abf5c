#pragma once
// Linear layer in Hugging Face Conv1D layout: weight is (C, OC), out = inp @ weight + bias.
//
// Note [Linear forward in row chunks]
// `--split-ops K` (docs/parallel.md) gathers a linear's weight W (C, OC) in K contiguous slices
// of rows (input features) and computes each slice apart. The backward of a row slice gives the
// whole linear's bits as it is: every element keeps its whole reduction (dweight[rows] =
// inp[:, rows]^T @ dout sums over N, dinp[:, rows] = dout @ W[rows]^T sums over OC). The
// forward sums over C, which the slices cut, so the canonical forward of EVERY linear, split or
// not, is a fixed sequence of row chunks added in order:
//   out = bias + inp[:, c0] @ W[c0, :];  out += inp[:, c1] @ W[c1, :];  ...  (chunks c0 < c1 <..)
// The chunks are kLinearChunks ranges of rows fixed by C alone (LinearChunkBegin: boundaries
// multiples of 16 rows, the last ending at C); the first non-empty chunk is one GEMM with the
// bias written into each tile first (beta = 1; without bias beta = 0), each later chunk one GEMM
// with beta = 1. A split run computes slice k as the chunks it holds, in the same order, so it
// issues exactly the unsplit run's GEMMs and gets its bits. Supported split factors divide
// kLinearChunks (K in {1, 2, 4}: slice k is chunks [k*4/K, (k+1)*4/K)).
// This order is part of every backend's contract (core/device/kernel_table.h): a backend's
// linear_forward must be its linear_forward_rows(..., 0, C), and its chunks must add in order.
// Cost of the chunks against one GEMM (linear_forward, 2 threads, N 1024, median of 21 runs,
// 2026-11-26, machine: 2 cores): see COST_LINE.
namespace strata::kernels {

constexpr int kLinearChunks = 4;

// First weight row of chunk c (0 <= c <= kLinearChunks) of a linear with C input features:
// chunk boundaries are multiples of 16 rows (except C itself), fixed by C alone; chunk
// kLinearChunks begins at C. Chunks may be empty for small C.
int LinearChunkBegin(int C, int c);

// out (N, OC), inp (N, C), weight (C, OC), bias (OC) or nullptr.
// Exactly linear_forward_rows(out, inp, weight, bias, N, C, OC, 0, C).
void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC);
// dinp (N, C) += dout @ weight^T   (dinp may be nullptr: not computed)
// dweight (C, OC) += inp^T @ dout
// dbias (OC) += sum over rows of dout  (dbias may be nullptr)
// Exactly linear_backward_rows(dinp, dweight, dbias, dout, inp, weight, N, C, OC, 0, C).
void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int C, int OC);

// Forward of weight rows [r0, r1), which must be chunk boundaries (LinearChunkBegin values),
// weight_rows = W + r0*OC, inp the whole (N, C) input (leading dimension C): for each non-empty
// chunk [a, b) inside [r0, r1), in order: when a == 0, out = bias + inp[:, a:b] @ W[a:b, :] (the
// bias written per tile, then beta = 1; without bias beta = 0); else out += inp[:, a:b] @
// W[a:b, :] (beta = 1). bias is only read when r0 == 0. (C == 0: out = bias, or zeros.)
void linear_forward_rows(float* out, const float* inp, const float* weight_rows,
                         const float* bias, int N, int C, int OC, int r0, int r1);
// Backward of weight rows [r0, r1) (any r0 < r1): dinp[:, r0:r1] += dout @ weight_rows^T (dinp is
// the whole (N, C), may be nullptr), dweight_rows (r1-r0, OC) += inp[:, r0:r1]^T @ dout, dbias +=
// column sums of dout (may be nullptr; the same fixed-partition reduction as linear_backward).
void linear_backward_rows(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                          const float* inp, const float* weight_rows, int N, int C, int OC, int r0,
                          int r1);

}  // namespace strata::kernels
