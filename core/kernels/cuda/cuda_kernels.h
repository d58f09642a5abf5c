// The CUDA kernels of the kernel table (core/device/kernel_table.h): one function per entry,
// with exactly the signature, shapes and semantics of the CPU kernel of the same name in
// core/kernels/ (backward entries accumulate, `+=`). Pointers are device memory; each function
// enqueues its work on the calling thread's current launch (core/device/cuda_launch.h, Note
// [CUDA kernels on the stream's thread]) and returns without waiting, except the
// cross-entropy forwards, which return the loss and so wait for it.
//
// Per-element arithmetic comes from the STRATA_HD headers the CPU kernels also use (hd.h);
// reductions use fixed launch shapes and fixed summation orders, never atomics, so a GPU run
// gives the same bits every time (Note [Deterministic CUDA reductions] in reduce.cuh).
// Compiled by nvcc (C++17) only.
#pragma once

#include <cstdint>

#include "core/kernels/adamw.h"

namespace strata::kernels::cuda {

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC);
void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int C, int OC);
void linear_forward_rows(float* out, const float* inp, const float* weight_rows,
                         const float* bias, int N, int C, int OC, int r0, int r1);
void linear_backward_rows(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                          const float* inp, const float* weight_rows, int N, int C, int OC, int r0,
                          int r1);
void nn_linear_forward_rows(float* y, int ldy, const float* x, const float* w_rows, int N, int in,
                            int out, int r0, int r1);
void nn_linear_backward_rows(float* dx, bool overwrite, float* dw_rows, const float* dy, int ldy,
                             const float* x, const float* w_rows, int N, int in, int out, int r0,
                             int r1);

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int N, int C);

void gelu_forward(float* out, const float* inp, long n);
void gelu_backward(float* dinp, const float* inp, const float* dout, long n);

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH);

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                     float eps);
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int N, int C);
void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                  int hs);
void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                   int hs);
void swiglu_forward(float* out, const float* gate_up, long N, int F);
void swiglu_backward(float* dgate_up, const float* dout, const float* gate_up, long N, int F);
void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                           int NKV);
void gqa_attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                            const float* att, int B, int T, int C, int NH, int NKV);

// The GEMM entries at --dtype bf16 (Note [bf16 compute] in core/kernels/dtype.h; gemm.cuh).
void sgemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc);
void linear_forward_bf16(float* out, const float* inp, const float* weight, const float* bias,
                         int N, int C, int OC);
void linear_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, int N, int C, int OC);
void linear_forward_rows_bf16(float* out, const float* inp, const float* weight_rows,
                              const float* bias, int N, int C, int OC, int r0, int r1);
void linear_backward_rows_bf16(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                               const float* inp, const float* weight_rows, int N, int C, int OC,
                               int r0, int r1);
void nn_linear_forward_rows_bf16(float* y, int ldy, const float* x, const float* w_rows, int N,
                                 int in, int out, int r0, int r1);
void nn_linear_backward_rows_bf16(float* dx, bool overwrite, float* dw_rows, const float* dy,
                                  int ldy, const float* x, const float* w_rows, int N, int in,
                                  int out, int r0, int r1);
void attention_forward_bf16(float* out, float* att, const float* qkv, int B, int T, int C,
                            int NH);
void attention_backward_bf16(float* dqkv, float* datt, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH);
void gqa_attention_forward_bf16(float* out, float* att, const float* qkv, int B, int T, int C,
                                int NH, int NKV);
void gqa_attention_backward_bf16(float* dqkv, float* datt, const float* dout, const float* qkv,
                                 const float* att, int B, int T, int C, int NH, int NKV);

void residual_forward(float* out, const float* a, const float* b, long n);
void residual_backward(float* da, float* db, const float* dout, long n);

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int B, int T, int C);
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                        int T, int C, int vocab_begin, int vocab_end);

float crossentropy_forward(float* probs, const float* logits, const int32_t* targets, int N,
                           int V);
void crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                           float dloss, int N, int V);

void vocab_parallel_embedding_forward(float* out, const int32_t* tokens, const float* wte_rows,
                                      int B, int T, int C, int vocab_begin, int vocab_end);
void vocab_parallel_logit_max(float* row_max, const float* logits, int N, int V, int valid);
void vocab_parallel_softmax_partial(float* probs, float* row_max, float* sums,
                                    const float* rank_max, int tp, const float* logits,
                                    const int32_t* targets, int N, int V, int valid,
                                    int vocab_begin);
float vocab_parallel_crossentropy_forward(float* probs, const float* row_max, const float* sums,
                                          int N, int V);
void vocab_parallel_crossentropy_backward(float* dlogits, const float* probs,
                                          const int32_t* targets, float dloss, int N, int V,
                                          int vocab_begin);

void adamw_update(float* param, const float* grad, float* m, float* v, long n,
                  const AdamWParams& hp, float grad_scale);

void zero(float* x, long n);
// Writes host memory; waits for the sums.
void chunk_sums_of_squares(const float* x, long n, double* host_out);

void copy(float* dst, const float* src, long n);
// Waits for the current launch's stream.
void finish();

}  // namespace strata::kernels::cuda
