#include "core/device/kernel_table.h"

#include "core/kernels/attention.h"
#include "core/kernels/copy.h"
#include "core/kernels/crossentropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/linear.h"
#include "core/kernels/matmul.h"
#include "core/kernels/nn_linear.h"
#include "core/kernels/norms.h"
#include "core/kernels/residual.h"
#include "core/kernels/rmsnorm.h"
#include "core/kernels/rope.h"
#include "core/kernels/swiglu.h"
#include "core/kernels/vocab_parallel.h"

namespace strata {

bool KernelTable::complete() const { return missing().empty(); }

std::string KernelTable::missing() const {
  const struct {
    const char* name;
    bool present;
  } entries[] = {
      {"sgemm", sgemm != nullptr},
      {"linear_forward", linear_forward != nullptr},
      {"linear_backward", linear_backward != nullptr},
      {"linear_forward_rows", linear_forward_rows != nullptr},
      {"linear_backward_rows", linear_backward_rows != nullptr},
      {"nn_linear_forward_rows", nn_linear_forward_rows != nullptr},
      {"nn_linear_backward_rows", nn_linear_backward_rows != nullptr},
      {"layernorm_forward", layernorm_forward != nullptr},
      {"layernorm_backward", layernorm_backward != nullptr},
      {"gelu_forward", gelu_forward != nullptr},
      {"gelu_backward", gelu_backward != nullptr},
      {"attention_forward", attention_forward != nullptr},
      {"attention_backward", attention_backward != nullptr},
      {"rmsnorm_forward", rmsnorm_forward != nullptr},
      {"rmsnorm_backward", rmsnorm_backward != nullptr},
      {"rope_forward", rope_forward != nullptr},
      {"rope_backward", rope_backward != nullptr},
      {"swiglu_forward", swiglu_forward != nullptr},
      {"swiglu_backward", swiglu_backward != nullptr},
      {"gqa_attention_forward", gqa_attention_forward != nullptr},
      {"gqa_attention_backward", gqa_attention_backward != nullptr},
      {"residual_forward", residual_forward != nullptr},
      {"residual_backward", residual_backward != nullptr},
      {"embedding_forward", embedding_forward != nullptr},
      {"embedding_backward", embedding_backward != nullptr},
      {"crossentropy_forward", crossentropy_forward != nullptr},
      {"crossentropy_backward", crossentropy_backward != nullptr},
      {"vocab_parallel_embedding_forward", vocab_parallel_embedding_forward != nullptr},
      {"vocab_parallel_logit_max", vocab_parallel_logit_max != nullptr},
      {"vocab_parallel_softmax_partial", vocab_parallel_softmax_partial != nullptr},
      {"vocab_parallel_crossentropy_forward", vocab_parallel_crossentropy_forward != nullptr},
      {"vocab_parallel_crossentropy_backward", vocab_parallel_crossentropy_backward != nullptr},
      {"adamw_update", adamw_update != nullptr},
      {"zero", zero != nullptr},
      {"chunk_sums_of_squares", chunk_sums_of_squares != nullptr},
      {"copy", copy != nullptr},
      {"finish", finish != nullptr},
  };
  // A field added to KernelTable but not listed here would let complete() skip it.
  static_assert(sizeof(entries) / sizeof(entries[0]) * sizeof(void (*)()) == sizeof(KernelTable),
                "every KernelTable entry must be listed in KernelTable::missing()");
  std::string names;
  for (const auto& e : entries) {
    if (e.present) continue;
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

const KernelTable& CpuKernelTable() {
  static const KernelTable table = {
      .sgemm = kernels::sgemm,
      .linear_forward = kernels::linear_forward,
      .linear_backward = kernels::linear_backward,
      .linear_forward_rows = kernels::linear_forward_rows,
      .linear_backward_rows = kernels::linear_backward_rows,
      .nn_linear_forward_rows = kernels::nn_linear_forward_rows,
      .nn_linear_backward_rows = kernels::nn_linear_backward_rows,
      .layernorm_forward = kernels::layernorm_forward,
      .layernorm_backward = kernels::layernorm_backward,
      .gelu_forward = kernels::gelu_forward,
      .gelu_backward = kernels::gelu_backward,
      .attention_forward = kernels::attention_forward,
      .attention_backward = kernels::attention_backward,
      .rmsnorm_forward = kernels::rmsnorm_forward,
      .rmsnorm_backward = kernels::rmsnorm_backward,
      .rope_forward = kernels::rope_forward,
      .rope_backward = kernels::rope_backward,
      .swiglu_forward = kernels::swiglu_forward,
      .swiglu_backward = kernels::swiglu_backward,
      .gqa_attention_forward = kernels::gqa_attention_forward,
      .gqa_attention_backward = kernels::gqa_attention_backward,
      .residual_forward = kernels::residual_forward,
      .residual_backward = kernels::residual_backward,
      .embedding_forward = kernels::embedding_forward,
      .embedding_backward = kernels::embedding_backward,
      .crossentropy_forward = kernels::crossentropy_forward,
      .crossentropy_backward = kernels::crossentropy_backward,
      .vocab_parallel_embedding_forward = kernels::vocab_parallel_embedding_forward,
      .vocab_parallel_logit_max = kernels::vocab_parallel_logit_max,
      .vocab_parallel_softmax_partial = kernels::vocab_parallel_softmax_partial,
      .vocab_parallel_crossentropy_forward = kernels::vocab_parallel_crossentropy_forward,
      .vocab_parallel_crossentropy_backward = kernels::vocab_parallel_crossentropy_backward,
      .adamw_update = kernels::adamw_update,
      .zero = kernels::zero,
      .chunk_sums_of_squares = kernels::chunk_sums_of_squares,
      .copy = kernels::copy,
      .finish = kernels::finish,
  };
  return table;
}

const KernelTable& CpuBf16KernelTable() {
  static const KernelTable table = [] {
    KernelTable t = CpuKernelTable();
    t.sgemm = kernels::sgemm_bf16;
    t.linear_forward = kernels::linear_forward_bf16;
    t.linear_backward = kernels::linear_backward_bf16;
    t.linear_forward_rows = kernels::linear_forward_rows_bf16;
    t.linear_backward_rows = kernels::linear_backward_rows_bf16;
    t.nn_linear_forward_rows = kernels::nn_linear_forward_rows_bf16;
    t.nn_linear_backward_rows = kernels::nn_linear_backward_rows_bf16;
    t.attention_forward = kernels::attention_forward_bf16;
    t.attention_backward = kernels::attention_backward_bf16;
    t.gqa_attention_forward = kernels::gqa_attention_forward_bf16;
    t.gqa_attention_backward = kernels::gqa_attention_backward_bf16;
    return t;
  }();
  return table;
}

}  // namespace strata
