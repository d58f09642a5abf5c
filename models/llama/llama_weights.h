// LLaMA weights in and out under Hugging Face's names (llama_layout.h), stored (out, in) as
// nn.Linear stores them, block by block (core/nn/model.h's WeightReader and WeightWriter), so
// that a model larger than memory is read and written tensor by tensor, never whole:
// - in from a safetensors file or a Hugging Face model directory (core/io/hf_checkpoint.h),
//   BF16/F16 widened to fp32; a tied checkpoint's extra lm_head.weight and tensors the model has
//   no use for (rotary buffers) are ignored;
// - out as one safetensors file of F32 tensors with the shape in __metadata__
//   (core/nn/layout_weights.h).
#pragma once

#include <memory>
#include <string>

#include "core/nn/model.h"
#include "models/llama/llama_layout.h"

namespace strata::models {

// `layout` must outlive the reader. Errors, each at fault of `init` and naming the file:
// HfCheckpoint::Open's; from read_block, Corruption for a tensor the model needs that is absent
// (named, with its shape) or of another shape (named, both shapes).
Result<std::unique_ptr<WeightReader>> OpenLlamaWeights(const std::string& path,
                                                       const LlamaLayout& layout);

// Every tensor of the layout into `path`; `layout` must outlive the writer. Errors at fault of
// `export`.
Result<std::unique_ptr<WeightWriter>> CreateLlamaWeights(const std::string& path,
                                                         const LlamaLayout& layout);

}  // namespace strata::models
