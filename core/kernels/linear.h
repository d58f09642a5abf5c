#pragma once
// Linear layer in Hugging Face Conv1D layout: weight is (C, OC), out = inp @ weight + bias.
//
// Note [Linear forward in row chunks]
// `--split-ops K` (docs/parallel.md) gathers a linear's weight W (C, OC) in K contiguous slices
// of rows (input features) and computes each slice apart; a split run must give the unsplit
// run's bits. The forward sums over C, which the slices cut, so the canonical forward of EVERY
// linear, split or not, is a fixed sequence of row chunks added in order:
//   out = bias + inp[:, c0] @ W[c0, :];  out += inp[:, c1] @ W[c1, :];  ...  (c0, c1, ... in order)
// The chunks are kLinearChunks ranges of rows fixed by C alone (LinearChunkBegin: boundaries
// multiples of 16 rows, the last chunk ending at C; small C leaves leading chunks empty). The
// first non-empty chunk is one GEMM with the bias written into each tile first (beta = 1; without
// bias beta = 0), each later chunk one GEMM with beta = 1. A split run computes slice k as the
// chunks it holds, in the same order, so it issues exactly the unsplit run's GEMMs. Supported
// split factors divide kLinearChunks (K in {1, 2, 4}: slice k is chunks [k*4/K, (k+1)*4/K)); the
// bias goes to every slice that begins at row 0 (a leading empty slice does nothing).
// The backward's elements keep their whole reductions under a row slice (dweight[rows] =
// inp[:, rows]^T @ dout sums over N, dinp[:, rows] = dout @ W[rows]^T over OC), but that is not
// enough for equal bits: an element's result depends on the shape of the GEMM call it is in
// (OpenBLAS picks micro-kernels, edge paths and a small-matrix path by shape). Measured 2026-11-26
// (OpenBLAS 0.3.21, one GEMM per product, row slices on chunk boundaries): with the Cooperlake
// kernels it selects on this machine, dinp differed at N 64, C 48, OC 80 (28 of 3072 elements for
// K = 2, 92 for K = 4), and dinp or dweight at many small shapes (C, OC <= 512); with
// OPENBLAS_CORETYPE=Haswell (the kernels Note [Deterministic GEMM] was measured with) even
// N 1024, C 768, OC 3072 differed (dinp 19903 of 786432 elements, dweight 78429 of 2359296,
// K = 4). So the backward's GEMMs are cut too: their tiles along the weight rows are the whole
// GEMM's tiles (gemm_tile_grid) further cut at the chunk boundaries, and a slice runs exactly the
// tiles inside it; a tile's bits depend only on its operands, whatever the BLAS kernel.
// This is part of every backend's contract (core/device/kernel_table.h): linear_forward is
// linear_forward_rows(..., 0, C) and linear_backward is linear_backward_rows(..., 0, C), bit for
// bit, and a slice on chunk boundaries gives the whole's bits of every element it writes.
// Cost against one GEMM per product (2 threads, N 1024, GPT-2 small (C, OC) = (768, 2304),
// (768, 768), (768, 3072), (3072, 768), medians of 31 paired runs, 4 runs, 2026-11-26, machine:
// 2 cores): forward 0.99, 1.00, 1.00, 1.00 (each within 0.02); backward (dinp + dweight) 1.03,
// 1.01, 1.03, 1.00. (Four separate GEMMs per chunk in the backward cost 1.06-1.11.)
#include <vector>

namespace strata::kernels {

constexpr int kLinearChunks = 4;

// First weight row of chunk c (0 <= c <= kLinearChunks) of a linear with C input features:
// chunk boundaries are multiples of 16 rows (except C itself), fixed by C alone; chunk
// kLinearChunks begins at C. Chunks may be empty for small C.
int LinearChunkBegin(int C, int c);

// LinearChunkBegin(C, c) for c = 0 .. kLinearChunks.
std::vector<int> LinearChunkBounds(int C);

// True when row r is a chunk boundary of a linear with C input features (a LinearChunkBegin).
bool IsLinearChunkBegin(int C, int r);

// The forward's chunks inside [r0, r1) (chunk boundaries), in order: first(b) for the chunk
// [0, b), the one that writes the bias, and rest(a, b) for each later non-empty chunk [a, b);
// C == 0 calls first(0) alone (out = bias, or zeros). Every backend's linear_forward_rows walks
// the chunks through this, so they issue the same GEMMs in the same order.
template <typename First, typename Rest>
void ForEachForwardChunk(int C, int r0, int r1, const First& first, const Rest& rest) {
  if (C == 0) {
    first(0);
    return;
  }
  for (int c = 0; c < kLinearChunks; ++c) {
    const int a = LinearChunkBegin(C, c), b = LinearChunkBegin(C, c + 1);
    if (a == b || a < r0 || b > r1) continue;
    if (a == 0) {
      first(b);
    } else {
      rest(a, b);
    }
  }
}

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
// Backward of weight rows [r0, r1) (any 0 <= r0 <= r1 <= C): dinp[:, r0:r1] += dout @
// weight_rows^T (dinp is the whole (N, C), may be nullptr), dweight_rows (r1-r0, OC) +=
// inp[:, r0:r1]^T @ dout, dbias += column sums of dout (may be nullptr; the same fixed-partition
// reduction as linear_backward). On chunk boundaries, the whole backward's bits for those rows.
void linear_backward_rows(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                          const float* inp, const float* weight_rows, int N, int C, int OC, int r0,
                          int r1);

// The four above at --dtype bf16 (Note [bf16 compute] in dtype.h): every GEMM operand (inp,
// weight, dout) rounded to bf16, products summed in fp32; the bias and dbias stay fp32. The same
// chunks and tiles, so the same contracts between them.
void linear_forward_bf16(float* out, const float* inp, const float* weight, const float* bias,
                         int N, int C, int OC);
void linear_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, int N, int C, int OC);
void linear_forward_rows_bf16(float* out, const float* inp, const float* weight_rows,
                              const float* bias, int N, int C, int OC, int r0, int r1);
void linear_backward_rows_bf16(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                               const float* inp, const float* weight_rows, int N, int C, int OC,
                               int r0, int r1);

}  // namespace strata::kernels
