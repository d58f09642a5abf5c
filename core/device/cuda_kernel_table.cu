// The CUDA backend's kernel table: the kernels of core/kernels/cuda/, which enqueue on the
// stream whose launch() calls them (Note [CUDA kernels on the stream's thread]).
#include "core/device/kernel_table.h"
#include "core/kernels/cuda/cuda_kernels.h"

namespace strata {

const KernelTable& CudaKernelTable() {
  namespace k = kernels::cuda;
  // In KernelTable's declaration order (C++17 has no designated initialisers); the table test
  // checks each entry by name.
  static const KernelTable table = {
      k::sgemm,
      k::linear_forward,
      k::linear_backward,
      k::linear_forward_rows,
      k::linear_backward_rows,
      k::nn_linear_forward_rows,
      k::nn_linear_backward_rows,
      k::layernorm_forward,
      k::layernorm_backward,
      k::gelu_forward,
      k::gelu_backward,
      k::attention_forward,
      k::attention_backward,
      k::rmsnorm_forward,
      k::rmsnorm_backward,
      k::rope_forward,
      k::rope_backward,
      k::swiglu_forward,
      k::swiglu_backward,
      k::gqa_attention_forward,
      k::gqa_attention_backward,
      k::residual_forward,
      k::residual_backward,
      k::embedding_forward,
      k::embedding_backward,
      k::crossentropy_forward,
      k::crossentropy_backward,
      k::vocab_parallel_embedding_forward,
      k::vocab_parallel_logit_max,
      k::vocab_parallel_softmax_partial,
      k::vocab_parallel_crossentropy_forward,
      k::vocab_parallel_crossentropy_backward,
      k::adamw_update,
      k::zero,
      k::chunk_sums_of_squares,
      k::copy,
      k::finish,
  };
  return table;
}

const KernelTable& CudaBf16KernelTable() {
  namespace k = kernels::cuda;
  static const KernelTable table = [] {
    KernelTable t = CudaKernelTable();
    t.sgemm = k::sgemm_bf16;
    t.linear_forward = k::linear_forward_bf16;
    t.linear_backward = k::linear_backward_bf16;
    t.linear_forward_rows = k::linear_forward_rows_bf16;
    t.linear_backward_rows = k::linear_backward_rows_bf16;
    t.nn_linear_forward_rows = k::nn_linear_forward_rows_bf16;
    t.nn_linear_backward_rows = k::nn_linear_backward_rows_bf16;
    t.attention_forward = k::attention_forward_bf16;
    t.attention_backward = k::attention_backward_bf16;
    t.gqa_attention_forward = k::gqa_attention_forward_bf16;
    t.gqa_attention_backward = k::gqa_attention_backward_bf16;
    return t;
  }();
  return table;
}

}  // namespace strata
