#pragma once
// Linear layer in nn.Linear layout: weight W is (out, in), y = x @ W^T, no bias (LLaMA's
// projections). Under --split-ops a weight marked `split` comes in slices of rows, which here are
// output features, and a split run must give the unsplit run's bits.
//
// Note [nn.Linear in row chunks]
// The rows of W are cut into the kLinearChunks chunks of LinearChunkBegin(out, c) (Note [Linear
// forward in row chunks] in linear.h: boundaries fixed by `out` alone, multiples of 16), and a
// slice is whole chunks. The three products of rows [r0, r1):
// - forward y[:, r0:r1] = x @ W[r0:r1]^T and weight gradient dW[r0:r1] += dy[:, r0:r1]^T @ x
//   keep their whole reductions; each is one GEMM call whose tiles are the whole GEMM's tiles
//   (gemm_tile_grid of the whole product) cut at the chunk boundaries, the range running exactly
//   those inside it, so a tile's bits are the whole's;
// - input gradient dx = dy @ W sums over the rows a slice cuts: one call over the whole dx's
//   tiles, each tile adding the range's chunks in chunk order, one single-threaded GEMM per
//   chunk (sgemm_on_tiles_k_chunks), so consecutive ranges give one range's bits.
// So the entries over [0, out) are the unsplit layer, and ranges on chunk boundaries, in order,
// give its bits. Against one GEMM per product (llama-small's MLP, 2 threads) the extra tile cuts
// and the chunked dx cost what docs/models.md records. This is part of every backend's contract
// (core/device/kernel_table.h).
namespace strata::kernels {

// y (N, ldy), columns [r0, r1) = x (N, in) @ W[r0:r1]^T, w_rows = W + r0 * in (row-major, (r1-r0,
// in)); r0 and r1 are chunk boundaries of `out`.
void nn_linear_forward_rows(float* y, int ldy, const float* x, const float* w_rows, int N, int in,
                            int out, int r0, int r1);
// dw_rows (r1-r0, in) += dy[:, r0:r1]^T @ x, and dx (N, in) = (overwrite ? 0 : dx) + dy[:, r0:r1]
// @ W[r0:r1] summed chunk by chunk in order; dy is (N, ldy).
void nn_linear_backward_rows(float* dx, bool overwrite, float* dw_rows, const float* dy, int ldy,
                             const float* x, const float* w_rows, int N, int in, int out, int r0,
                             int r1);

// The same at --dtype bf16 (Note [bf16 compute] in dtype.h): operands rounded to bf16, products
// summed in fp32, the same tiles and chunks.
void nn_linear_forward_rows_bf16(float* y, int ldy, const float* x, const float* w_rows, int N,
                                 int in, int out, int r0, int r1);
void nn_linear_backward_rows_bf16(float* dx, bool overwrite, float* dw_rows, const float* dy,
                                  int ldy, const float* x, const float* w_rows, int N, int in,
                                  int out, int r0, int r1);

}  // namespace strata::kernels
