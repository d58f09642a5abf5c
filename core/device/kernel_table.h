// KernelTable: the compute a training step needs, one plain function pointer per op (forward
// and backward), owned by a Device backend (ggml-backend style). Model code
// (models/gpt2/gpt_blocks.h) calls kernels only through the table of the device that holds its
// tensors, so a backend swaps in its own kernels without the model knowing.
//
// Contract:
// - Every entry has exactly the signature of the CPU kernel of the same name in core/kernels/
//   (see that header for shapes and semantics; backward entries accumulate, `+=`). So the CPU
//   table is just the kernels' addresses, and any backend's entry must give the CPU kernel's
//   results (the sim backend gives its bits).
// - Pointer arguments are device memory of the device that owns the table (on the sim device,
//   host-addressable arena memory); scalars and the AdamWParams struct are host values.
//   crossentropy_forward returns the loss to the host, and chunk_sums_of_squares writes its sums
//   to host memory, so those complete before returning. Host code must not read or write
//   device memory itself: everything a step does to it goes through this table or copy_async.
// - Entries run on the calling thread, inside a function given to Stream::launch: on the sim
//   device a stream's worker (inside the caller's tbb::task_arena, which bounds the threads); on
//   CUDA the stream's host thread, where an entry enqueues its kernels on that stream (Note
//   [CUDA kernels on the stream's thread] in cuda_launch.h).
// - A nullptr entry means the backend lacks that op. complete() says whether every entry is
//   there; a device whose table is not complete cannot train (CreateDevice refuses it).
//
// Compiled by nvcc too (core/device/cuda_device.cu, C++17): keep this header C++17-clean.
#pragma once

#include <cstdint>
#include <string>

#include "core/kernels/adamw.h"
#include "core/kernels/dtype.h"

namespace strata {

struct KernelTable {
  // GEMM (core/kernels/matmul.h): C = alpha * op(A) @ op(B) + beta * C, row-major.
  void (*sgemm)(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc) = nullptr;

  // Linear layer, HF Conv1D layout (core/kernels/linear.h).
  void (*linear_forward)(float* out, const float* inp, const float* weight, const float* bias,
                         int N, int C, int OC) = nullptr;
  void (*linear_backward)(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, int N, int C, int OC) = nullptr;
  // The same linear by ranges of weight rows (Note [Linear forward in row chunks] in linear.h),
  // part of every backend's contract: the forward adds the fixed row chunks in order,
  // linear_forward / linear_backward are the *_rows entries over [0, C) bit for bit, and row
  // slices on chunk boundaries give the whole linear's bits.
  void (*linear_forward_rows)(float* out, const float* inp, const float* weight_rows,
                              const float* bias, int N, int C, int OC, int r0,
                              int r1) = nullptr;
  void (*linear_backward_rows)(float* dinp, float* dweight_rows, float* dbias, const float* dout,
                               const float* inp, const float* weight_rows, int N, int C, int OC,
                               int r0, int r1) = nullptr;
  // Linear layer, nn.Linear layout (out, in), no bias, by ranges of weight rows (output features;
  // Note [nn.Linear in row chunks] in core/kernels/nn_linear.h), part of every backend's
  // contract: ranges on chunk boundaries, in order, give the bits of the range [0, out).
  void (*nn_linear_forward_rows)(float* y, int ldy, const float* x, const float* w_rows, int N,
                                 int in, int out, int r0, int r1) = nullptr;
  void (*nn_linear_backward_rows)(float* dx, bool overwrite, float* dw_rows, const float* dy,
                                  int ldy, const float* x, const float* w_rows, int N, int in,
                                  int out, int r0, int r1) = nullptr;

  // LayerNorm over the last dimension (core/kernels/layernorm.h).
  void (*layernorm_forward)(float* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int N, int C) = nullptr;
  void (*layernorm_backward)(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const float* mean,
                             const float* rstd, int N, int C) = nullptr;

  // GELU, tanh approximation (core/kernels/gelu.h).
  void (*gelu_forward)(float* out, const float* inp, long n) = nullptr;
  void (*gelu_backward)(float* dinp, const float* inp, const float* dout, long n) = nullptr;

  // Causal multi-head self-attention core (core/kernels/attention.h).
  void (*attention_forward)(float* out, float* att, const float* qkv, int B, int T, int C,
                            int NH) = nullptr;
  void (*attention_backward)(float* dqkv, float* datt, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH) = nullptr;

  // The LLaMA family's ops: RMSNorm (core/kernels/rmsnorm.h), rotary embeddings in place
  // (core/kernels/rope.h; cos and sin are device copies of rope_table's), SwiGLU
  // (core/kernels/swiglu.h) and grouped-query attention (core/kernels/attention.h).
  void (*rmsnorm_forward)(float* out, float* rstd, const float* inp, const float* weight, int N,
                          int C, float eps) = nullptr;
  void (*rmsnorm_backward)(float* dinp, float* dweight, const float* dout, const float* inp,
                           const float* weight, const float* rstd, int N, int C) = nullptr;
  void (*rope_forward)(float* qkv, const float* cos, const float* sin, int B, int T, int ld,
                       int heads, int hs) = nullptr;
  void (*rope_backward)(float* dqkv, const float* cos, const float* sin, int B, int T, int ld,
                        int heads, int hs) = nullptr;
  void (*swiglu_forward)(float* out, const float* gate_up, long N, int F) = nullptr;
  void (*swiglu_backward)(float* dgate_up, const float* dout, const float* gate_up, long N,
                          int F) = nullptr;
  void (*gqa_attention_forward)(float* out, float* att, const float* qkv, int B, int T, int C,
                                int NH, int NKV) = nullptr;
  void (*gqa_attention_backward)(float* dqkv, float* datt, const float* dout, const float* qkv,
                                 const float* att, int B, int T, int C, int NH,
                                 int NKV) = nullptr;

  // Residual add (core/kernels/residual.h).
  void (*residual_forward)(float* out, const float* a, const float* b, long n) = nullptr;
  void (*residual_backward)(float* da, float* db, const float* dout, long n) = nullptr;

  // Token + position embedding (core/kernels/embedding.h).
  void (*embedding_forward)(float* out, const int32_t* tokens, const float* wte,
                            const float* wpe, int B, int T, int C) = nullptr;
  void (*embedding_backward)(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                             int B, int T, int C, int vocab_begin, int vocab_end) = nullptr;

  // Softmax cross-entropy, mean over tokens (core/kernels/crossentropy.h).
  float (*crossentropy_forward)(float* probs, const float* logits, const int32_t* targets, int N,
                                int V) = nullptr;
  void (*crossentropy_backward)(float* dlogits, const float* probs, const int32_t* targets,
                                float dloss, int N, int V) = nullptr;

  // Vocab-parallel embedding and cross-entropy: a tensor-parallel rank's slice of the vocabulary
  // between the tp group's all-reduces (core/kernels/vocab_parallel.h).
  void (*vocab_parallel_embedding_forward)(float* out, const int32_t* tokens,
                                           const float* wte_rows, int B, int T, int C,
                                           int vocab_begin, int vocab_end) = nullptr;
  void (*vocab_parallel_logit_max)(float* row_max, const float* logits, int N, int V,
                                   int valid) = nullptr;
  void (*vocab_parallel_softmax_partial)(float* probs, float* row_max, float* sums,
                                         const float* rank_max, int tp, const float* logits,
                                         const int32_t* targets, int N, int V, int valid,
                                         int vocab_begin) = nullptr;
  float (*vocab_parallel_crossentropy_forward)(float* probs, const float* row_max,
                                               const float* sums, int N, int V) = nullptr;
  void (*vocab_parallel_crossentropy_backward)(float* dlogits, const float* probs,
                                               const int32_t* targets, float dloss, int N, int V,
                                               int vocab_begin) = nullptr;

  // AdamW, element-wise over one contiguous range (core/kernels/adamw.h).
  void (*adamw_update)(float* param, const float* grad, float* m, float* v, long n,
                       const kernels::AdamWParams& hp, float grad_scale) = nullptr;

  // Zeroing and the gradient norm's partial sums (core/kernels/norms.h). chunk_sums_of_squares
  // writes its sums to HOST memory, so it completes before returning, like crossentropy_forward.
  void (*zero)(float* x, long n) = nullptr;
  void (*chunk_sums_of_squares)(const float* x, long n, double* host_out) = nullptr;

  // Around the collectives (core/kernels/copy.h): a device-to-device copy in the launch's order,
  // and finish, which returns once every kernel the launch has started has completed, so that a
  // Comm's own stream (NCCL) may read their results. Call finish before a collective that reads
  // what kernels of the same launch wrote.
  void (*copy)(float* dst, const float* src, long n) = nullptr;
  void (*finish)() = nullptr;

  // True when every entry is set.
  bool complete() const;
  // The names of the nullptr entries, comma-separated, in declaration order ("" when complete).
  std::string missing() const;
};

// The CPU kernels of core/kernels/; what the sim device's kernels() returns.
const KernelTable& CpuKernelTable();
// The CPU kernels at --dtype bf16 (Note [bf16 compute] in core/kernels/dtype.h): CpuKernelTable()
// with the GEMM entries (sgemm, linear_*, nn_linear_*, attention_*, gqa_attention_*) replaced by
// their *_bf16 kernels.
const KernelTable& CpuBf16KernelTable();

// The CUDA backend's table; what a CUDA device's kernels() returns: the kernels of
// core/kernels/cuda/ (core/device/cuda_kernel_table.cu), or every entry nullptr in a build
// without CUDA (core/device/cuda_unavailable.cc).
const KernelTable& CudaKernelTable();
// The CUDA backend at --dtype bf16: CudaKernelTable() with the GEMM entries on bf16 tensor cores
// (cublasGemmEx, fp32 accumulation); every entry nullptr without CUDA.
const KernelTable& CudaBf16KernelTable();

}  // namespace strata
